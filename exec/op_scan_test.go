package exec

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	memtable "github.com/cachedb/cachedb/catalog/memory"
)

// narrowTable returns a memory table (k int32, f float32, s utf8) holding batches batches of
// the rows (i, i/2, "r<i>") for i = 1…3. Its batches come from a plain Go allocator because
// the table keeps them for its whole life.
func narrowTable(t *testing.T, batches int) catalog.Table {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "s", Type: opString, Nullable: true},
	}, nil)
	cat := memtable.NewCatalog("test")
	tbl, err := cat.CreateTable(context.Background(), "narrow", schema, false)
	if err != nil {
		t.Fatal(err)
	}
	for range batches {
		b := batchOf(t, memory.NewGoAllocator(), schema, []any{1, 0.5, "r1"}, []any{2, 1.0, "r2"}, []any{nil, 1.5, "r3"})
		if err := tbl.(catalog.InsertableTable).Append(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	return tbl
}

func TestScanCanonicalTypesAndFilters(t *testing.T) {
	tc := newTestContext(t, 0)
	tbl := narrowTable(t, 20)
	op, err := NewScan(tbl, "narrow", catalog.ScanRequest{Columns: []int{0, 1}}, []Expr{cmpTest(">", intCol(0, "k"), NewLiteral(scalarInt(1)))})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := tbl.Scan(context.Background(), catalog.ScanRequest{Columns: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	tasks := plan.Tasks
	if got := op.Partitions(); got != len(tasks) {
		t.Errorf("partitions = %d, want %d (one per scan task)", got, len(tasks))
	}
	want := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: opInt64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	if !op.Schema().Equal(want) {
		t.Errorf("schema = %s, want %s", op.Schema(), want)
	}
	rows := collectRows(t, op, tc)
	if len(rows) != 20 || rows[0] != "2|1" {
		t.Errorf("got %d rows starting %q, want 20 rows of 2|1", len(rows), rows[:min(1, len(rows))])
	}
	// Re-execution reads the same pinned state, even after the table grows.
	if err := appendMore(tbl); err != nil {
		t.Fatal(err)
	}
	if again := collectRows(t, op, tc); !slices.Equal(again, rows) {
		t.Errorf("second execution: got %d rows, want %d", len(again), len(rows))
	}
}

// TestFilteringScanDropsFilterOnlyColumns checks that a scan outputs only its first columns
// while its filters read the others.
func TestFilteringScanDropsFilterOnlyColumns(t *testing.T) {
	tc := newTestContext(t, 2)
	tbl := narrowTable(t, 3)
	// Read s and k; filter on k > 1 (column 1 of what is read); output s only.
	req := catalog.ScanRequest{Columns: []int{2, 0}}
	op, err := NewFilteringScan(tbl, "narrow", req, []Expr{cmpTest(">", intCol(1, "k"), NewLiteral(scalarInt(1)))}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := schemaOf("s", opString); !op.Schema().Equal(want) {
		t.Errorf("schema = %s, want %s", op.Schema(), want)
	}
	if got, want := collectRows(t, op, tc), sorted("r2", "r2", "r2"); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// Every row kept: the batch passes through, still without the filter's column.
	all, err := NewFilteringScan(tbl, "narrow", req, []Expr{cmpTest(">", NewLiteral(scalarInt(2)), NewLiteral(scalarInt(1)))}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := collectRows(t, all, tc); len(got) != 9 || got[0] != "r1" {
		t.Errorf("got %q, want the 9 rows of s", got)
	}
	if _, err := NewFilteringScan(tbl, "narrow", req, nil, 1); err == nil {
		t.Error("a scan dropping columns without a filter was accepted")
	}
}

func appendMore(tbl catalog.Table) error {
	b := batchOfNoT(tbl.Schema())
	defer b.Release()
	return tbl.(catalog.InsertableTable).Append(context.Background(), b)
}

func TestScanEmptyTable(t *testing.T) {
	tc := newTestContext(t, 0)
	op, err := NewScan(narrowTable(t, 0), "narrow", catalog.ScanRequest{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rows := collectRows(t, op, tc); len(rows) != 0 {
		t.Errorf("got %q from an empty table", rows)
	}
}

func TestFilterAndProject(t *testing.T) {
	tc := newTestContext(t, 2)
	schema := schemaOf("a", opInt64, "b", opInt64)
	src := newSource(t, schema, []arrow.RecordBatch{
		batchOf(t, tc.Alloc, schema, []any{1, 10}, []any{2, 20}),
		batchOf(t, tc.Alloc, schema, []any{nil, 30}, []any{6, 5}),
		batchOf(t, tc.Alloc, schema, []any{0, 1}),
	})
	filter := NewFilter(src, cmpTest("<", intCol(0, "a"), intCol(1, "b")))
	rdr, err := filter.Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	batches := 0
	for rdr.Next() {
		if rdr.RecordBatch().NumRows() == 0 {
			t.Error("filter yielded an empty batch")
		}
		batches++
	}
	rdr.Release()
	if batches != 2 {
		t.Errorf("filter yielded %d batches, want 2 (the one where no row passes is skipped)", batches)
	}
	proj := NewProject(filter, []Expr{intCol(1, "b"), cmpTest(">", intCol(0, "a"), NewLiteral(scalarInt(1)))}, []string{"bee", "big"})
	if got, want := collectRows(t, proj, tc), sorted("10|false", "20|true", "1|false"); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if name := proj.Schema().Field(0).Name; name != "bee" {
		t.Errorf("column name %q, want bee", name)
	}
}

func TestValues(t *testing.T) {
	tc := newTestContext(t, 2)
	empty, err := NewValues(arrow.NewSchema(nil, nil), [][]Expr{{}})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := empty.Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() || rdr.RecordBatch().NumRows() != 1 || rdr.RecordBatch().NumCols() != 0 {
		t.Error("SELECT without FROM does not read one row of zero columns")
	}
	rdr.Release()

	schema := schemaOf("x", opInt64)
	lit := func(v any) []Expr {
		if v == nil {
			return []Expr{NewLiteral(scalarNull())}
		}
		return []Expr{NewLiteral(scalarInt(int64(v.(int))))}
	}
	vals, err := NewValues(schema, [][]Expr{lit(1), lit(nil), lit(3)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := collectRows(t, vals, tc), sorted("1", "NULL", "3"); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := NewValues(schema, [][]Expr{{}}); err == nil {
		t.Error("a row with the wrong number of values was accepted")
	}
}
