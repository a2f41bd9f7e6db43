package memory

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	memalloc "github.com/apache/arrow-go/v18/arrow/memory"
)

func TestTableStatistics(t *testing.T) {
	ctx := context.Background()
	tbl, err := NewCatalog("c").CreateTable(ctx, "t", schema, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewInt64Builder(memalloc.DefaultAllocator)
	defer b.Release()
	b.AppendValues([]int64{1, 0, 3, 0}, []bool{true, false, true, false})
	a := b.NewArray()
	defer a.Release()
	withNulls := array.NewRecordBatch(schema, []arrow.Array{a}, 4)
	defer withNulls.Release()
	mt := tbl.(*Table)
	for _, rec := range []arrow.RecordBatch{batch(5, 6), withNulls} {
		if err := mt.Append(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	st, err := mt.Statistics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 6 || len(st.Columns) != 1 || st.Columns[0].Nulls != 2 || st.Columns[0].Distinct != -1 || st.Columns[0].Min != nil {
		t.Errorf("statistics %+v, want 6 rows, 2 nulls, nothing else known", st)
	}
}

func TestDatasetStatistics(t *testing.T) {
	d := NewDataset("ds", 1, schema, 2)
	rec := batch(1, 2, 3)
	defer rec.Release()
	if err := d.SetPart(0, LocalPart([]arrow.RecordBatch{rec})); err != nil {
		t.Fatal(err)
	}
	if err := d.SetPart(1, Part{Rows: 5, Location: "node:1"}); err != nil {
		t.Fatal(err)
	}
	st, err := d.Statistics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 8 {
		t.Errorf("dataset rows %d, want 8 (3 held here, 5 on a node)", st.Rows)
	}
}
