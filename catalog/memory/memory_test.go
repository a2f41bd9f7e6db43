package memory

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	memalloc "github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

var schema = arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

func batch(vals ...int64) arrow.RecordBatch {
	b := array.NewInt64Builder(memalloc.DefaultAllocator)
	defer b.Release()
	b.AppendValues(vals, nil)
	a := b.NewArray()
	defer a.Release()
	return array.NewRecordBatch(schema, []arrow.Array{a}, int64(len(vals)))
}

// scanRows counts the rows a scan planned now will read.
func scanRows(t *testing.T, tasks []catalog.ScanTask) int64 {
	t.Helper()
	var n int64
	for _, task := range tasks {
		r, err := task.Open(context.Background(), memalloc.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			n += r.RecordBatch().NumRows()
		}
		r.Release()
	}
	return n
}

func TestScanIsPinnedToTheTableStateAtPlanning(t *testing.T) {
	ctx := context.Background()
	c := NewCatalog("test")
	tbl, err := c.CreateTable(ctx, "T", schema, false)
	if err != nil {
		t.Fatal(err)
	}
	it := tbl.(*Table)
	if err := it.Append(ctx, batch(1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	plan, err := tbl.Scan(ctx, catalog.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	tasks := plan.Tasks
	if err := it.Append(ctx, batch(4)); err != nil {
		t.Fatal(err)
	}
	if err := it.Replace(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := scanRows(t, tasks); n != 3 {
		t.Errorf("a scan planned before later writes read %d rows, want 3", n)
	}
	// Tasks can be opened again (correlated subqueries re-execute scans).
	if n := scanRows(t, tasks); n != 3 {
		t.Errorf("second read of the same tasks gave %d rows, want 3", n)
	}
}

func TestNamesAreCaseInsensitiveAndShared(t *testing.T) {
	ctx := context.Background()
	c := NewCatalog("test")
	if _, err := c.CreateTable(ctx, "Items", schema, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Table(ctx, "ITEMS"); err != nil {
		t.Errorf("lookup by another case: %v", err)
	}
	if _, err := c.CreateTable(ctx, "items", schema, false); errs.CategoryOf(err) != errs.AlreadyExists {
		t.Errorf("second table of one name: %v", err)
	}
	if err := c.CreateView(ctx, "items", "SELECT 1", false); errs.CategoryOf(err) != errs.AlreadyExists {
		t.Errorf("a view may not take a table's name: %v", err)
	}
	if err := c.CreateView(ctx, "v", "SELECT 1", false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTable(ctx, "V", schema, false); errs.CategoryOf(err) != errs.AlreadyExists {
		t.Errorf("a table may not take a view's name: %v", err)
	}
	if err := c.DropTable(ctx, "nope", false); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("drop of a missing table: %v", err)
	}
	if err := c.DropTable(ctx, "nope", true); err != nil {
		t.Errorf("DROP IF EXISTS of a missing table: %v", err)
	}
}

func TestAppendRejectsAnotherSchema(t *testing.T) {
	ctx := context.Background()
	c := NewCatalog("test")
	tbl, _ := c.CreateTable(ctx, "t", schema, false)
	other := arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBatch(other, []arrow.Array{array.MakeArrayOfNull(memalloc.DefaultAllocator, arrow.BinaryTypes.String, 1)}, 1)
	defer b.Release()
	if err := tbl.(*Table).Append(ctx, b); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("append of a foreign batch: %v", err)
	}
}

func TestScanMergesSmallBatchesInOrder(t *testing.T) {
	ctx := context.Background()
	c := NewCatalog("test")
	tbl, _ := c.CreateTable(ctx, "t", schema, false)
	for i := int64(0); i < 100; i++ {
		b := batch(i)
		if err := tbl.(*Table).Append(ctx, b); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	plan, err := tbl.Scan(ctx, catalog.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	tasks := plan.Tasks
	if len(tasks) != 1 {
		t.Fatalf("100 one-row inserts scan as %d tasks, want 1 after merging", len(tasks))
	}
	r, err := tasks[0].Open(ctx, memalloc.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var got []int64
	batches := 0
	for r.Next() {
		batches++
		got = append(got, r.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
	}
	if batches != 1 || len(got) != 100 {
		t.Fatalf("read %d rows in %d batches, want 100 in 1", len(got), batches)
	}
	for i, v := range got {
		if v != int64(i) {
			t.Fatalf("row %d is %d: merging must keep insertion order", i, v)
		}
	}
}
