package engine

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	memcat "github.com/cachedb/cachedb/catalog/memory"
)

// DemoRows is the number of rows in the demo table.
const DemoRows = 1000

var demoSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "category", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "feature_a", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "feature_b", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "label", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// createDemo adds the table `demo`: a small, deterministic feature table so that a newcomer's
// first query has something to read. Row i is a pure function of i.
func createDemo(ctx context.Context, cat *memcat.Catalog, mem memory.Allocator) error {
	t, err := cat.CreateTable(ctx, "demo", demoSchema, false)
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(mem, demoSchema)
	defer b.Release()
	categories := []string{"books", "games", "music", "sports", "travel"}
	for i := 0; i < DemoRows; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Int64Builder).Append(int64(i*7919%97 + 1))
		b.Field(2).(*array.StringBuilder).Append(categories[i%len(categories)])
		b.Field(3).(*array.Float64Builder).Append(float64(i%100) / 10)
		b.Field(4).(*array.Float64Builder).Append(float64((i*31)%1000) / 1000)
		b.Field(5).(*array.Int64Builder).Append(int64(i % 2))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := t.(*memcat.Table).Append(ctx, rec); err != nil {
		return fmt.Errorf("demo table: %w", err)
	}
	return nil
}
