package memory

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	memalloc "github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

// abSchema is (a BIGINT, b TEXT); key tests declare keys over it.
var abSchema = arrow.NewSchema([]arrow.Field{
	{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// abRows builds one batch from "a,b" rows; NULL spells a null value.
func abRows(rows ...string) arrow.RecordBatch {
	ab := array.NewInt64Builder(memalloc.DefaultAllocator)
	defer ab.Release()
	bb := array.NewStringBuilder(memalloc.DefaultAllocator)
	defer bb.Release()
	for _, r := range rows {
		a, b, _ := strings.Cut(r, ",")
		if a == "NULL" {
			ab.AppendNull()
		} else {
			var v int64
			fmt.Sscan(a, &v)
			ab.Append(v)
		}
		if b == "NULL" {
			bb.AppendNull()
		} else {
			bb.Append(b)
		}
	}
	aa, ba := ab.NewArray(), bb.NewArray()
	defer aa.Release()
	defer ba.Release()
	return array.NewRecordBatch(abSchema, []arrow.Array{aa, ba}, int64(len(rows)))
}

// contents renders every row a scan planned now reads, in table order.
func contents(t *testing.T, tbl catalog.Table) string {
	t.Helper()
	plan, err := tbl.Scan(context.Background(), catalog.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	tasks := plan.Tasks
	var out []string
	for _, task := range tasks {
		r, err := task.Open(context.Background(), memalloc.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			b := r.RecordBatch()
			for i := 0; i < int(b.NumRows()); i++ {
				out = append(out, b.Column(0).ValueStr(i)+","+b.Column(1).ValueStr(i))
			}
		}
		r.Release()
	}
	return strings.Join(out, " ")
}

var (
	pkA      = Key{Name: PrimaryKeyName, Primary: true, Parts: []KeyPart{{Column: 0}}}
	pkAB     = Key{Name: PrimaryKeyName, Primary: true, Parts: []KeyPart{{Column: 0}, {Column: 1}}}
	uniqueB  = Key{Name: "b", Parts: []KeyPart{{Column: 1}}}
	uniqueB1 = Key{Name: "b", Parts: []KeyPart{{Column: 1, Length: 1}}}
)

// write is one Insert of one or more batches (rows separated by ';' within a batch, '|'
// between batches).
type write struct {
	rows string
	mode OnConflict
	// want is the error category, or for a success "inserted/deleted".
	want string
	msg  string // a text the error message must contain
}

func TestInsertKeepsKeysUnique(t *testing.T) {
	cases := []struct {
		name   string
		keys   []Key
		writes []write
		want   string // table contents after the writes
	}{
		{"no keys: duplicates and NULLs are plain rows", nil, []write{
			{rows: "1,x;1,x;NULL,y", want: "3/0"},
			{rows: "1,z", mode: ConflictReplace, want: "1/0"},
		}, "1,x 1,x (null),y 1,z"},
		{"duplicate against an existing row", []Key{pkA}, []write{
			{rows: "1,x;2,y", want: "2/0"},
			{rows: "3,z;2,w", want: "already exists", msg: "Duplicate entry '2' for key 't.PRIMARY'"},
		}, "1,x 2,y"},
		{"duplicate within one insert, across batches", []Key{pkA}, []write{
			{rows: "1,x|2,y;1,z", want: "already exists", msg: "Duplicate entry '1' for key 't.PRIMARY'"},
			{rows: "1,x|2,y", want: "2/0"},
		}, "1,x 2,y"},
		{"NULL in a primary key column", []Key{pkA}, []write{
			{rows: "1,x;NULL,y", want: "invalid input", msg: "Column 'a' cannot be null"},
			{rows: "NULL,y", mode: ConflictReplace, want: "invalid input", msg: "Column 'a' cannot be null"},
		}, ""},
		{"composite primary key", []Key{pkAB}, []write{
			{rows: "1,x;1,y;2,x", want: "3/0"},
			{rows: "1,y", want: "already exists", msg: "Duplicate entry '1-y' for key 't.PRIMARY'"},
			{rows: "1,NULL", want: "invalid input", msg: "Column 'b' cannot be null"},
		}, "1,x 1,y 2,x"},
		{"UNIQUE allows many NULLs", []Key{uniqueB}, []write{
			{rows: "1,NULL;2,NULL;3,x", want: "3/0"},
			{rows: "4,NULL", want: "1/0"},
			{rows: "5,x", want: "already exists", msg: "Duplicate entry 'x' for key 't.b'"},
		}, "1,(null) 2,(null) 3,x 4,(null)"},
		{"prefix key compares leading characters", []Key{uniqueB1}, []write{
			{rows: "1,bob;2,carl", want: "2/0"},
			{rows: "3,bill", want: "already exists", msg: "Duplicate entry 'b' for key 't.b'"},
		}, "1,bob 2,carl"},
		{"primary key is checked before unique keys", []Key{uniqueB, pkA}, []write{
			{rows: "1,x", want: "1/0"},
			{rows: "1,x", want: "already exists", msg: "'t.PRIMARY'"},
		}, "1,x"},
		{"IGNORE skips conflicting rows", []Key{pkA}, []write{
			{rows: "1,x", want: "1/0"},
			{rows: "1,y;2,y;2,z;3,z", mode: ConflictSkip, want: "2/0"},
			{rows: "4,w", want: "1/0"},
			{rows: "4,v", want: "already exists"},
		}, "1,x 2,y 3,z 4,w"},
		{"REPLACE deletes the row holding the key", []Key{pkA}, []write{
			{rows: "1,x;2,y;3,z", want: "3/0"},
			{rows: "2,Y", mode: ConflictReplace, want: "1/1"},
			{rows: "4,w", mode: ConflictReplace, want: "1/0"},
			{rows: "3,Z;3,ZZ", mode: ConflictReplace, want: "2/2"},
			// Positions were renumbered: later checks still find the right rows.
			{rows: "1,X", mode: ConflictReplace, want: "1/1"},
			{rows: "4,v", want: "already exists"},
		}, "2,Y 4,w 3,ZZ 1,X"},
		{"REPLACE removing rows under two keys", []Key{pkA, uniqueB}, []write{
			{rows: "1,x;2,y;3,z", want: "3/0"},
			{rows: "1,y", mode: ConflictReplace, want: "1/2"},
			{rows: "5,y", want: "already exists", msg: "'t.b'"},
			{rows: "5,x", want: "1/0"},
		}, "3,z 1,y 5,x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			tbl, err := NewCatalog("test").CreateKeyedTable(ctx, "t", abSchema, c.keys, false)
			if err != nil {
				t.Fatal(err)
			}
			mt := tbl.(*Table)
			for _, w := range c.writes {
				var batches []arrow.RecordBatch
				for _, part := range strings.Split(w.rows, "|") {
					batches = append(batches, abRows(strings.Split(part, ";")...))
				}
				res, err := mt.Insert(ctx, batches, w.mode)
				for _, b := range batches {
					b.Release()
				}
				got := fmt.Sprintf("%d/%d", res.Inserted, res.Deleted)
				if err != nil {
					got = errs.CategoryOf(err).String()
				}
				if got != w.want || err != nil && !strings.Contains(err.Error(), w.msg) {
					t.Errorf("insert %q: got %s (%v), want %s %q", w.rows, got, err, w.want, w.msg)
				}
			}
			if got := contents(t, tbl); got != c.want {
				t.Errorf("contents %q, want %q", got, c.want)
			}
			if n := mt.NumRows(); n != int64(len(strings.Fields(c.want))) {
				t.Errorf("NumRows %d, contents %q", n, c.want)
			}
		})
	}
}

func TestReplaceKeepsKeysOrFailsUnchanged(t *testing.T) {
	ctx := context.Background()
	tbl, err := NewCatalog("test").CreateKeyedTable(ctx, "t", abSchema, []Key{pkA, uniqueB}, false)
	if err != nil {
		t.Fatal(err)
	}
	mt := tbl.(*Table)
	seed := abRows("1,x", "2,y")
	defer seed.Release()
	if err := mt.Append(ctx, seed); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		rows string
		want string // error category, or "ok"
	}{
		{"1,x;1,y", "already exists"},
		{"1,x;2,x", "already exists"},
		{"1,x;NULL,y", "invalid input"},
		{"2,x;1,y", "ok"},
	}
	for _, c := range cases {
		b := abRows(strings.Split(c.rows, ";")...)
		err := mt.Replace(ctx, []arrow.RecordBatch{b})
		b.Release()
		got := "ok"
		if err != nil {
			got = errs.CategoryOf(err).String()
		}
		if got != c.want {
			t.Errorf("Replace(%s): %v, want %s", c.rows, err, c.want)
		}
	}
	if got := contents(t, tbl); got != "2,x 1,y" {
		t.Errorf("contents %q after the rewrites", got)
	}
	// The index follows the new contents.
	b := abRows("3,x")
	defer b.Release()
	if err := mt.Append(ctx, b); errs.CategoryOf(err) != errs.AlreadyExists {
		t.Errorf("append of a value the rewrite introduced: %v", err)
	}
}

func TestCreateKeyedTableValidatesKeys(t *testing.T) {
	cases := []struct {
		name string
		keys []Key
	}{
		{"two primary keys", []Key{pkA, {Name: "other", Primary: true, Parts: []KeyPart{{Column: 1}}}}},
		{"column out of range", []Key{{Name: "k", Parts: []KeyPart{{Column: 2}}}}},
		{"column twice", []Key{{Name: "k", Parts: []KeyPart{{Column: 0}, {Column: 0}}}}},
		{"prefix of a number", []Key{{Name: "k", Parts: []KeyPart{{Column: 0, Length: 2}}}}},
		{"duplicate names", []Key{uniqueB, {Name: "B", Parts: []KeyPart{{Column: 0}}}}},
		{"no columns", []Key{{Name: "k"}}},
	}
	for _, c := range cases {
		_, err := NewCatalog("test").CreateKeyedTable(context.Background(), "t", abSchema, c.keys, false)
		if errs.CategoryOf(err) != errs.InvalidInput {
			t.Errorf("%s: %v, want invalid input", c.name, err)
		}
	}
}

func TestDroppedTableComesBackWithoutItsRows(t *testing.T) {
	ctx := context.Background()
	c := NewCatalog("test")
	tbl, _ := c.CreateKeyedTable(ctx, "t", abSchema, []Key{pkA}, false)
	b := abRows("1,x")
	defer b.Release()
	if err := tbl.(*Table).Append(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := c.DropTable(ctx, "t", false); err != nil {
		t.Fatal(err)
	}
	tbl, _ = c.CreateKeyedTable(ctx, "t", abSchema, []Key{pkA}, false)
	if err := tbl.(*Table).Append(ctx, b); err != nil {
		t.Errorf("re-created table still holds the old key: %v", err)
	}
	if got := tbl.(*Table).Keys(); len(got) != 1 || !got[0].Primary {
		t.Errorf("Keys() = %v", got)
	}
}

func TestKeyEncodingIsTypedAndNullAware(t *testing.T) {
	mem := memalloc.DefaultAllocator
	f := array.NewFloat64Builder(mem)
	f.AppendValues([]float64{0, negativeZero(), 1.5}, nil)
	f.AppendNull()
	fa := f.NewArray()
	f.Release()
	defer fa.Release()
	s := array.NewStringBuilder(mem)
	// "a" then "bc" and "ab" then "c" must not run together in a two-part key.
	s.AppendValues([]string{"a", "ab", "héllo", "hé"}, nil)
	sa := s.NewArray()
	s.Release()
	defer sa.Release()
	s2 := array.NewStringBuilder(mem)
	s2.AppendValues([]string{"bc", "c", "x", "y"}, nil)
	sa2 := s2.NewArray()
	s2.Release()
	defer sa2.Release()
	sch := arrow.NewSchema([]arrow.Field{{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, {Name: "s", Type: arrow.BinaryTypes.String}, {Name: "s2", Type: arrow.BinaryTypes.String}}, nil)
	rec := array.NewRecordBatch(sch, []arrow.Array{fa, sa, sa2}, 4)
	defer rec.Release()
	bk := newBatchKeys(rec, []Key{
		{Name: "f", Parts: []KeyPart{{Column: 0}}},
		{Name: "ss", Parts: []KeyPart{{Column: 1}, {Column: 2}}},
		{Name: "p", Parts: []KeyPart{{Column: 1, Length: 2}}},
	})
	enc := func(k, row int) (string, bool) {
		b, ok := bk.encode(k, row, nil)
		return string(b), ok
	}
	if z, _ := enc(0, 0); func() bool { nz, _ := enc(0, 1); return nz != z }() {
		t.Error("0.0 and -0.0 must be one key value")
	}
	if _, ok := enc(0, 3); ok {
		t.Error("a NULL part must make the key value absent")
	}
	if a, b := func() string { v, _ := enc(1, 0); return v }(), func() string { v, _ := enc(1, 1); return v }(); a == b {
		t.Error("('a','bc') and ('ab','c') must differ")
	}
	if a, b := func() string { v, _ := enc(2, 2); return v }(), func() string { v, _ := enc(2, 3); return v }(); a != b {
		t.Error("a two-character prefix must cut at characters, not bytes")
	}
	if got := bk.display(1, 0); got != "a-bc" {
		t.Errorf("display %q, want a-bc", got)
	}
	if got := bk.display(0, 2); got != "1.5" {
		t.Errorf("display %q, want 1.5", got)
	}
}

func negativeZero() float64 {
	z := 0.0
	return -z
}

func TestScanPlannedBeforeReplacingInsertKeepsOldRows(t *testing.T) {
	ctx := context.Background()
	tbl, _ := NewCatalog("test").CreateKeyedTable(ctx, "t", abSchema, []Key{pkA}, false)
	mt := tbl.(*Table)
	b := abRows("1,x", "2,y")
	defer b.Release()
	if _, err := mt.Insert(ctx, []arrow.RecordBatch{b}, ConflictError); err != nil {
		t.Fatal(err)
	}
	plan, err := tbl.Scan(ctx, catalog.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	tasks := plan.Tasks
	r := abRows("1,X")
	defer r.Release()
	if _, err := mt.Insert(ctx, []arrow.RecordBatch{r}, ConflictReplace); err != nil {
		t.Fatal(err)
	}
	if n := scanRows(t, tasks); n != 2 {
		t.Errorf("earlier scan read %d rows, want 2", n)
	}
	if got := contents(t, tbl); got != "2,y 1,X" {
		t.Errorf("contents %q", got)
	}
}

// BenchmarkInsertOneRowKeyed inserts one row per statement into a table with two keys: the
// cost per statement must not grow with the table (one index lookup per key).
func BenchmarkInsertOneRowKeyed(b *testing.B) {
	ctx := context.Background()
	tbl, _ := NewCatalog("test").CreateKeyedTable(ctx, "t", abSchema, []Key{pkA, uniqueB}, false)
	mt := tbl.(*Table)
	for i := 0; b.Loop(); i++ {
		rec := abRows(fmt.Sprintf("%d,v%d", i, i))
		if _, err := mt.Insert(ctx, []arrow.RecordBatch{rec}, ConflictError); err != nil {
			b.Fatal(err)
		}
		rec.Release()
	}
}
