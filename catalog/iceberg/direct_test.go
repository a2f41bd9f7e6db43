package iceberg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
)

func directSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		field(1, "id", iceberg.PrimitiveTypes.Int64, true),
		field(2, "name", iceberg.PrimitiveTypes.String, false),
		field(3, "note", iceberg.PrimitiveTypes.String, true),
		field(4, "amount", iceberg.DecimalTypeOf(15, 2), false),
		field(5, "day", iceberg.PrimitiveTypes.Date, true),
		field(6, "ts", iceberg.PrimitiveTypes.Timestamp, false),
		field(7, "flag", iceberg.PrimitiveTypes.Bool, false),
		field(8, "score", iceberg.PrimitiveTypes.Float64, false),
		field(9, "small", iceberg.PrimitiveTypes.Int32, false),
		field(10, "blob", iceberg.PrimitiveTypes.Binary, false),
	)
}

// directRows are n rows from id from on: name has 5 values and NULLs, note is unique per row
// (a dictionary that a small dictionary limit makes fall back to plain pages), blob has 3
// values, empty ones included, and every nullable column holds some NULLs.
func directRows(from, n int) string {
	var rows []string
	names := []string{`"alpha"`, `"b"`, `""`, `"délta"`, `null`}
	blobs := []string{`"AAEC"`, `""`, `null`}
	for i := from; i < from+n; i++ {
		amount := fmt.Sprintf(`"%d.%02d"`, i*7, i%100)
		if i%11 == 0 {
			amount = "null"
		}
		rows = append(rows, fmt.Sprintf(`{"id":%d,"name":%s,"note":"note number %d of the table","amount":%s,"day":"2024-0%d-1%d","ts":"2024-01-01 10:%02d:00","flag":%t,"score":%g,"small":%d,"blob":%s}`,
			i, names[i%len(names)], i, amount, 1+i%9, i%10, i%60, i%3 == 0, float64(i)/4, i%1000-500, blobs[i%len(blobs)]))
	}
	return "[" + strings.Join(rows, ",") + "]"
}

// TestDirectReadMatchesIceberg: tasks read directly yield the same rows, with the same schema,
// as iceberg-go's reader, whole files, row ranges left by row-group pruning and split tasks
// alike, with string columns read as dictionaries and, past a small dictionary limit, plainly,
// and fixed-width columns decoded by fixedchunk.
func TestDirectReadMatchesIceberg(t *testing.T) {
	l := newLake(t, "lake")
	for name, props := range map[string]iceberg.Properties{
		"dict":     {table.ParquetRowGroupLimitKey: "64"},
		"fallback": {table.ParquetRowGroupLimitKey: "64", table.ParquetDictSizeBytesKey: "64"},
	} {
		tbl := l.create("default", name, directSchema(), icecat.WithProperties(props))
		tbl = appendJSON(t, tbl, directRows(0, 300))
		appendJSON(t, tbl, directRows(1000, 100))
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	cases := []struct {
		name  string
		split int64
		req   catalog.ScanRequest
	}{
		{"all columns", 0, catalog.ScanRequest{}},
		{"reordered and repeated columns", 0, catalog.ScanRequest{Columns: []int{9, 1, 0, 1, 3}}},
		{"one string column", 0, catalog.ScanRequest{Columns: []int{2}}},
		{"row groups pruned", 0, catalog.ScanRequest{Columns: all, Filter: between(0, i64(100), i64(170))}},
		{"one file", 0, catalog.ScanRequest{Columns: all, Filter: between(0, i64(1050), i64(1060))}},
		{"split tasks", 1, catalog.ScanRequest{Columns: []int{0, 1, 2}}},
		{"split and pruned", 1, catalog.ScanRequest{Columns: []int{1, 0}, Filter: between(0, i64(60), i64(200))}},
	}
	for _, tname := range []string{"dict", "fallback"} {
		for _, tc := range cases {
			direct := l.reader(Config{SplitBytes: tc.split})
			plain := l.reader(Config{SplitBytes: tc.split})
			plain.noDirect = true
			got := scanTable(t, direct, tname, tc.req)
			want := scanTable(t, plain, tname, tc.req)
			if direct.directReads.Load() == 0 || plain.directReads.Load() != 0 {
				t.Fatalf("%s, %s: %d tasks read directly, %d by the reader without direct reads; want some and none",
					tname, tc.name, direct.directReads.Load(), plain.directReads.Load())
			}
			if tc.name != "one string column" && direct.fixedChunks.Load() == 0 {
				t.Fatalf("%s, %s: no fixed-width column chunk was decoded by fixedchunk", tname, tc.name)
			}
			if !got.sch.Equal(want.sch) {
				t.Errorf("%s, %s: schema %s, want %s", tname, tc.name, got.sch, want.sch)
			}
			if !slices.Equal(got.rows, want.rows) {
				t.Errorf("%s, %s: %d rows differ from iceberg-go's %d:\n%s\nwant\n%s", tname, tc.name,
					len(got.rows), len(want.rows), strings.Join(head(got.rows), "\n"), strings.Join(head(want.rows), "\n"))
			}
			if tc.name == "all columns" && len(got.rows) != 400 {
				t.Errorf("%s: %d rows, want 400", tname, len(got.rows))
			}
		}
	}
}

func head(rows []string) []string { return rows[:min(len(rows), 5)] }

func scanTable(t *testing.T, c *Catalog, name string, req catalog.ScanRequest) scanResult {
	t.Helper()
	tbl, err := c.Table(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return scan(t, tbl, req)
}

// TestDirectReadFallsBack: tasks with delete files, and files lacking a selected column, are
// read by iceberg-go, with the rows it gives.
func TestDirectReadFallsBack(t *testing.T) {
	ctx := context.Background()
	l := newLake(t, "lake")
	tbl := l.create("default", "evolved", directSchema())
	tbl = appendJSON(t, tbl, directRows(0, 20))
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"extra"}, iceberg.PrimitiveTypes.Int64, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c := l.reader(Config{})
	res := scanTable(t, c, "evolved", catalog.ScanRequest{Columns: []int{0, 10}})
	if c.directReads.Load() != 0 || len(res.rows) != 20 || !strings.HasSuffix(res.rows[0], "|NULL") {
		t.Errorf("a file without the added column: %d direct reads, rows %q; want none and NULLs", c.directReads.Load(), head(res.rows))
	}
	res = scanTable(t, c, "evolved", catalog.ScanRequest{Columns: []int{0, 1}, Filter: eq(0, scalar.NewInt64Scalar(3))})
	if c.directReads.Load() != 1 || !slices.Contains(res.rows, "3|délta") {
		t.Errorf("old columns: %d direct reads, rows %q; want one and id 3", c.directReads.Load(), res.rows)
	}
}

// TestAllDictionaryPages: the page encoding statistics tell a dictionary-encoded string column
// from one written plainly and from one whose dictionary outgrew its limit, after which the
// writer falls back to plain pages.
func TestAllDictionaryPages(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "few", Type: arrow.BinaryTypes.String},
		{Name: "many", Type: arrow.BinaryTypes.String},
		{Name: "plain", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := 0; i < 2000; i++ {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprint(i % 3))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("value %d", i))
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprint(i % 3))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "f.parquet")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	props := parquet.NewWriterProperties(parquet.WithDictionaryPageSizeLimit(1024), parquet.WithDataPageSize(512),
		parquet.WithDictionaryFor("plain", false))
	w, err := pqarrow.NewFileWriter(sc, out, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	for leaf, want := range []bool{true, false, false} {
		if got := allDictionaryPages(pf.MetaData(), leaf, []int{0}); got != want {
			cc, _ := pf.MetaData().RowGroup(0).ColumnChunk(leaf)
			t.Errorf("column %d (pages %v): all dictionary pages %t, want %t", leaf, cc.EncodingStats(), got, want)
		}
	}
}

// TestExpandDictionary: expanding gives the values the indices pick, NULL for a NULL index,
// for sliced arrays too, with short values only and with long ones, and leaks nothing.
func TestExpandDictionary(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	someNull := []bool{false, false, false, true, false, false, true, false, false}
	noNull := make([]bool, len(someNull))
	for _, longest := range []string{"zzz", "a value of twenty-two", "a value longer than thirty-two bytes"} {
		for _, null := range [][]bool{someNull, noNull} {
			testExpandDictionary(t, mem, []string{"x", "", "yy", "", longest, "x", "", "yy", longest}, null)
		}
	}
}

func testExpandDictionary(t *testing.T, mem memory.Allocator, want []string, null []bool) {
	for _, vt := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.Binary} {
		dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: vt}
		b := array.NewDictionaryBuilder(mem, dt)
		for i, v := range want {
			switch {
			case null[i]:
				b.AppendNull()
			case vt.ID() == arrow.STRING:
				if err := b.(*array.BinaryDictionaryBuilder).AppendString(v); err != nil {
					t.Fatal(err)
				}
			default:
				if err := b.(*array.BinaryDictionaryBuilder).Append([]byte(v)); err != nil {
					t.Fatal(err)
				}
			}
		}
		d := b.NewArray().(*array.Dictionary)
		b.Release()
		for _, off := range []int{0, 3} {
			in := array.NewSlice(d, int64(off), int64(d.Len())).(*array.Dictionary)
			got, err := expandDictionary(in, mem)
			if err != nil {
				t.Fatal(err)
			}
			if !arrow.TypeEqual(got.DataType(), vt) || got.Len() != len(want)-off {
				t.Fatalf("%s from %d: %s of %d values", vt, off, got.DataType(), got.Len())
			}
			for i := off; i < len(want); i++ {
				j := i - off
				var v string
				switch a := got.(type) {
				case *array.String:
					v = a.Value(j)
				case *array.Binary:
					v = string(a.Value(j))
				}
				if got.IsNull(j) != null[i] || (!null[i] && v != want[i]) {
					t.Errorf("%s from %d: value %d is %q (null %t), want %q (null %t)", vt, off, i, v, got.IsNull(j), want[i], null[i])
				}
			}
			if got.NullN() != in.NullN() {
				t.Errorf("%s from %d: %d NULLs, want %d", vt, off, got.NullN(), in.NullN())
			}
			got.Release()
			in.Release()
		}
		d.Release()
	}
}
