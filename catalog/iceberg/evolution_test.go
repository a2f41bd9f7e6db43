package iceberg

import (
	"context"
	"iter"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
)

func TestDeletes(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "deletes", plainSchema(), icecat.WithProperties(iceberg.Properties{
		table.WriteDeleteModeKey: table.WriteModeMergeOnRead,
		"format-version":         "2",
	}))
	tbl = appendJSON(t, tbl, `[{"id":1,"name":"a"},{"id":2,"name":"b"},{"id":3,"name":"c"},{"id":4,"name":"d"},{"id":5,"name":"e"}]`)

	// Merge-on-read delete: a position delete file.
	var err error
	tbl, err = tbl.Delete(ctx, iceberg.EqualTo(iceberg.Reference("id"), int64(2)), nil)
	if err != nil {
		t.Fatal(err)
	}
	afterPos := tbl.CurrentSnapshot().SnapshotID

	// Equality deletes keyed on id.
	keySchema, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, field(1, "id", iceberg.PrimitiveTypes.Int64, true)), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	keys, _, err := array.RecordFromJSON(memory.DefaultAllocator, keySchema, strings.NewReader(`[{"id":4},{"id":5}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Release()
	tx := tbl.NewTransaction()
	var records iter.Seq2[arrow.RecordBatch, error] = func(yield func(arrow.RecordBatch, error) bool) { yield(keys, nil) }
	if err := tx.CommitEqualityDeletes(ctx, []int{1}, records, nil); err != nil {
		t.Fatal(err)
	}
	if _, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	c := l.reader(Config{})
	got, err := c.Table(ctx, "deletes")
	if err != nil {
		t.Fatal(err)
	}
	res := scan(t, got, catalog.ScanRequest{})
	equalRows(t, res.rows, "1|a|NULL", "3|c|NULL")
	if n, _ := strconv.Atoi(explainValue(t, res.plan.Explain, "delete_files")); n != 2 {
		t.Errorf("explain %q: want delete_files=2 (one position, one equality)", res.plan.Explain)
	}
	proj := scan(t, got, catalog.ScanRequest{Columns: []int{1}})
	equalRows(t, proj.rows, "a", "c")

	old, err := c.Table(ctx, "deletes@"+strconv.FormatInt(afterPos, 10))
	if err != nil {
		t.Fatal(err)
	}
	res = scan(t, old, catalog.ScanRequest{})
	equalRows(t, res.rows, "1|a|NULL", "3|c|NULL", "4|d|NULL", "5|e|NULL")
	if explainValue(t, res.plan.Explain, "delete_files") != "1" {
		t.Errorf("explain %q: want delete_files=1", res.plan.Explain)
	}
}

func TestSchemaEvolution(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "evolve", iceberg.NewSchema(0,
		field(1, "id", iceberg.PrimitiveTypes.Int64, true),
		field(2, "name", iceberg.PrimitiveTypes.String, false),
		field(3, "legacy", iceberg.PrimitiveTypes.Int32, false),
	))
	tbl = appendJSON(t, tbl, `[{"id":1,"name":"a","legacy":10},{"id":2,"name":"b","legacy":20}]`)
	v1 := tbl.CurrentSnapshot().SnapshotID

	tx := tbl.NewTransaction()
	upd := tx.UpdateSchema(true, false).
		AddColumn([]string{"extra"}, iceberg.PrimitiveTypes.Float64, "", false, nil).
		RenameColumn([]string{"name"}, "label").
		DeleteColumn([]string{"legacy"})
	if err := upd.Commit(); err != nil {
		t.Fatal(err)
	}
	var err error
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	_ = appendJSON(t, tbl, `[{"id":3,"label":"c","extra":0.5}]`)

	c := l.reader(Config{})
	cur, err := c.Table(ctx, "evolve")
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldNames(cur.Schema()); got != "id,label,extra" {
		t.Errorf("current schema columns %s", got)
	}
	// Old files read the added column as NULL and the renamed one by field id.
	equalRows(t, scan(t, cur, catalog.ScanRequest{}).rows, "1|a|NULL", "2|b|NULL", "3|c|0.5")
	equalRows(t, scan(t, cur, catalog.ScanRequest{Columns: []int{2, 1}}).rows, "NULL|a", "NULL|b", "0.5|c")
	// A filter on the renamed column, by its new name.
	f := scan(t, cur, catalog.ScanRequest{Filter: eq(1, scalar.NewStringScalar("b"))})
	equalRows(t, keepRows(f.rows, colIs(1, "b")), "2|b|NULL")

	old, err := c.Table(ctx, "evolve@"+strconv.FormatInt(v1, 10))
	if err != nil {
		t.Fatal(err)
	}
	if got := fieldNames(old.Schema()); got != "id,name,legacy" {
		t.Errorf("old snapshot's schema columns %s, want the schema of that snapshot", got)
	}
	if old.Schema().Field(2).Type.ID() != arrow.INT32 {
		t.Errorf("old legacy column type %s", old.Schema().Field(2).Type)
	}
	equalRows(t, scan(t, old, catalog.ScanRequest{}).rows, "1|a|10", "2|b|20")
	equalRows(t, keepRows(scan(t, old, catalog.ScanRequest{Columns: []int{2}, Filter: eq(2, scalar.NewInt64Scalar(20))}).rows, colIs(0, "20")), "20")
}

func fieldNames(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ",")
}

// TestReadOnlyAddedColumn reads only a column that older files lack: iceberg-go's reader finds no
// column of such a file to read, so the scan adds one the file has and drops it again.
func TestReadOnlyAddedColumn(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "grown", iceberg.NewSchema(0,
		field(1, "id", iceberg.PrimitiveTypes.Int64, true),
		field(2, "name", iceberg.PrimitiveTypes.String, false),
	))
	tbl = appendJSON(t, tbl, `[{"id":1,"name":"a"},{"id":2,"name":"b"}]`)
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"d"}, iceberg.PrimitiveTypes.Int32, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	var err error
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	_ = appendJSON(t, tbl, `[{"id":3,"name":"c","d":7},{"id":4,"name":"d","d":null}]`)

	got, err := l.reader(Config{}).Table(ctx, "grown")
	if err != nil {
		t.Fatal(err)
	}
	isNull := catalog.Filter{{{Column: 2, Op: catalog.OpIsNull}}}
	notNull := catalog.Filter{{{Column: 2, Op: catalog.OpIsNotNull}}}
	// keep re-applies a filter as the engine does: the read filter lets NULLs through on
	// optional columns (see icebergFilter), so a scan may return more rows than match.
	all := func(string) bool { return true }
	cases := []struct {
		name string
		req  catalog.ScanRequest
		keep func(row string) bool
		want []string
	}{
		{"only d", catalog.ScanRequest{Columns: []int{2}}, all, []string{"NULL", "NULL", "NULL", "7"}},
		{"d twice", catalog.ScanRequest{Columns: []int{2, 2}}, all, []string{"NULL|NULL", "NULL|NULL", "NULL|NULL", "7|7"}},
		{"d where d is null", catalog.ScanRequest{Columns: []int{2}, Filter: isNull}, func(r string) bool { return r == "NULL" }, []string{"NULL", "NULL", "NULL"}},
		{"d where d is not null", catalog.ScanRequest{Columns: []int{2}, Filter: notNull}, func(r string) bool { return r != "NULL" }, []string{"7"}},
		{"d where d = 7", catalog.ScanRequest{Columns: []int{2}, Filter: eq(2, scalar.NewInt64Scalar(7))}, func(r string) bool { return r == "7" }, []string{"7"}},
		// No output column with a filter: every row of the row groups that may hold a NULL d
		// (all four; the engine reads the columns its filters need and applies them).
		{"count where d is null", catalog.ScanRequest{Columns: []int{}, Filter: isNull}, all, []string{"", "", "", ""}},
		// Only the old file: ids 1 and 2, d NULL.
		{"d where id < 3", catalog.ScanRequest{Columns: []int{2}, Filter: catalog.Filter{{{Column: 0, Op: catalog.OpLt, Values: []scalar.Scalar{scalar.NewInt64Scalar(3)}}}}}, all, []string{"NULL", "NULL"}},
	}
	for _, tc := range cases {
		res, err := tryScan(got, tc.req)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var rows []string
		for _, r := range res.rows {
			if tc.keep(r) {
				rows = append(rows, r)
			}
		}
		if !slicesEqualSorted(rows, tc.want) {
			t.Errorf("%s: rows %q, want %q", tc.name, rows, tc.want)
		}
	}
}

// TestReadOnlyAddedColumnUnknownStats covers files whose metadata does not say which columns
// they hold: the read fails in iceberg-go and is retried with every column.
func TestReadOnlyAddedColumnUnknownStats(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "grown", iceberg.NewSchema(0, field(1, "id", iceberg.PrimitiveTypes.Int64, true)))
	tbl = appendJSON(t, tbl, `[{"id":1},{"id":2}]`)
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"d"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	var err error
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	appendJSON(t, tbl, `[{"id":3,"d":"x"}]`)
	got, err := l.reader(Config{}).Table(ctx, "grown")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := got.Scan(ctx, catalog.ScanRequest{Columns: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	var rows []string
	for _, task := range plan.Tasks {
		st := task.(*scanTask)
		// As if the manifest recorded no column sizes: read with the selected column only.
		if st.scan, err = st.state.scanFor(""); err != nil {
			t.Fatal(err)
		}
		rdr, err := task.Open(ctx, mem)
		if err != nil {
			t.Fatal(err)
		}
		for rdr.Next() {
			rows = append(rows, formatRows(rdr.RecordBatch())...)
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		rdr.Release()
	}
	mem.AssertSize(t, 0)
	if !slicesEqualSorted(rows, []string{"NULL", "NULL", "x"}) {
		t.Errorf("rows %q, want NULL, NULL, x", rows)
	}
}

func slicesEqualSorted(got, want []string) bool {
	g := append([]string(nil), got...)
	w := append([]string(nil), want...)
	sort.Strings(g)
	sort.Strings(w)
	return strings.Join(g, "\n") == strings.Join(w, "\n")
}
