package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A TPC-H Q1 shaped aggregate: two low-cardinality string keys and sums of decimal arithmetic
// with constants, over batches as large as a dataset partition holds them (128 k rows).

const q1BatchRows = 131072

func q1Batches(mem memory.Allocator, count int) []arrow.RecordBatch {
	d := &arrow.Decimal128Type{Precision: 15, Scale: 2}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "qty", Type: d}, {Name: "price", Type: d}, {Name: "disc", Type: d}, {Name: "tax", Type: d},
		{Name: "flag", Type: arrow.BinaryTypes.String}, {Name: "status", Type: arrow.BinaryTypes.String},
	}, nil)
	state := uint64(7)
	next := func(n uint64) uint64 {
		state = state*6364136223846793005 + 1442695040888963407
		return (state >> 17) % n
	}
	out := make([]arrow.RecordBatch, count)
	for i := range out {
		b := array.NewRecordBuilder(mem, schema)
		for r := 0; r < q1BatchRows; r++ {
			b.Field(0).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(100 + next(4900))))
			b.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(90000 + next(10000000))))
			b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(next(11))))
			b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(next(9))))
			b.Field(4).(*array.StringBuilder).Append([]string{"A", "N", "R"}[next(3)])
			b.Field(5).(*array.StringBuilder).Append([]string{"F", "O"}[next(2)])
		}
		out[i] = b.NewRecordBatch()
		b.Release()
	}
	return out
}

func BenchmarkPipelineQ1Shape(b *testing.B) {
	mem := memory.NewGoAllocator()
	batches := q1Batches(mem, 4)
	defer releaseBatches(batches)
	schema := batches[0].Schema()
	col := func(i int) Expr { return NewColumn(i, schema.Field(i).Name, schema.Field(i).Type) }
	call := func(name string, args ...Expr) Expr {
		e, err := NewCall(name, args)
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	disc := call("*", col(1), call("-", lit(int64(1)), col(2)))
	charge := call("*", call("*", col(1), call("-", lit(int64(1)), col(2))), call("+", lit(int64(1)), col(3)))
	src := &batchesOperator{schema: schema, batches: batches}
	agg, err := NewHashAggregate(src, []Expr{col(4), col(5)}, []string{"flag", "status"}, []AggregateSpec{
		{Name: "sum_qty", Func: "sum", Args: []Expr{col(0)}},
		{Name: "sum_price", Func: "sum", Args: []Expr{col(1)}},
		{Name: "sum_disc", Func: "sum", Args: []Expr{disc}},
		{Name: "sum_charge", Func: "sum", Args: []Expr{charge}},
		{Name: "avg_disc", Func: "avg", Args: []Expr{col(2)}},
		{Name: "count", Func: "count"},
	}, AggregatePartial)
	if err != nil {
		b.Fatal(err)
	}
	tc := &TaskContext{Alloc: mem}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rdr, err := agg.Execute(ctx, 0, tc)
		if err != nil {
			b.Fatal(err)
		}
		for rdr.Next() {
		}
		if rdr.Err() != nil {
			b.Fatal(rdr.Err())
		}
		rdr.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(batches)*q1BatchRows), "ns/row")
}
