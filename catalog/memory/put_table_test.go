package memory

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

func TestPutTablePublishesWholeTablesAndReplacesInOneStep(t *testing.T) {
	ctx := context.Background()
	c := NewCatalog("test")
	b := batch(1, 2, 3)
	defer b.Release()
	if _, err := c.PutTable(ctx, "t", schema, []arrow.RecordBatch{b}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutTable(ctx, "T", schema, nil, false); errs.CategoryOf(err) != errs.AlreadyExists {
		t.Fatalf("putting over a table without replace: %v", err)
	}
	if err := c.CreateIndex(ctx, "t", "i"); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTrigger(ctx, "trg", "t", false); err != nil {
		t.Fatal(err)
	}
	old, err := c.Table(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := old.Scan(ctx, catalog.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}

	wide := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	if _, err := c.PutTable(ctx, "t", wide, nil, true); err != nil {
		t.Fatalf("replacing: %v", err)
	}
	now, err := c.Table(ctx, "t")
	if err != nil || now.Schema().NumFields() != 2 || now.(*Table).NumRows() != 0 {
		t.Fatalf("after replace: %v, %v", now, err)
	}
	// A scan planned before the replace still reads the old rows.
	if n := scanRows(t, plan.Tasks); n != 3 {
		t.Errorf("the earlier scan read %d rows, want 3", n)
	}
	// The old table's index and trigger went with it, as DROP TABLE takes them.
	if err := c.CreateIndex(ctx, "t", "i"); err != nil {
		t.Errorf("the replaced table's index is still recorded: %v", err)
	}
	if err := c.CreateTrigger(ctx, "trg", "t", false); err != nil {
		t.Errorf("the replaced table's trigger is still recorded: %v", err)
	}

	if err := c.CreateView(ctx, "v", "SELECT 1", false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutTable(ctx, "v", schema, nil, true); errs.CategoryOf(err) != errs.AlreadyExists {
		t.Errorf("putting over a view: %v", err)
	}
	if _, err := c.AttachDataset(NewDataset("ds", 1, schema, 1), false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutTable(ctx, "ds", schema, nil, true); errs.CategoryOf(err) != errs.AlreadyExists {
		t.Errorf("putting over a dataset: %v", err)
	}
	other := batch(1)
	defer other.Release()
	if _, err := c.PutTable(ctx, "bad", wide, []arrow.RecordBatch{other}, false); err == nil {
		t.Error("a batch of another schema was taken")
	}
	if _, err := c.Table(ctx, "bad"); err == nil {
		t.Error("a table whose rows were refused was published")
	}
}
