package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/stream"
)

// Benchmarks of the scan → filter → aggregate path over batches shaped like bench/aggregate's
// table t(k int64 in [0, 1000), v float64, x int64 in [0, 1e6)).

const pipelineBatchRows = 65536

// pipelineBatches builds count batches of t; the same seed gives the same rows.
func pipelineBatches(mem memory.Allocator, count int) []arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	state := uint64(42)
	next := func() uint64 {
		state = state*6364136223846793005 + 1442695040888963407
		return state >> 17
	}
	out := make([]arrow.RecordBatch, count)
	for i := range out {
		b := array.NewRecordBuilder(mem, schema)
		k := b.Field(0).(*array.Int64Builder)
		v := b.Field(1).(*array.Float64Builder)
		x := b.Field(2).(*array.Int64Builder)
		for r := 0; r < pipelineBatchRows; r++ {
			k.Append(int64(next() % 1000))
			v.Append(float64(next()%100_000) / 100)
			x.Append(int64(next() % 1_000_000))
		}
		out[i] = b.NewRecordBatch()
		b.Release()
	}
	return out
}

// pipelineCondition is x > 900000 over pipelineBatches' schema.
func pipelineCondition(b *testing.B) Expr {
	cond, err := NewCall(">", []Expr{NewColumn(2, "x", arrow.PrimitiveTypes.Int64), lit(int64(900_000))})
	if err != nil {
		b.Fatal(err)
	}
	return cond
}

func BenchmarkPipelineFilter(b *testing.B) {
	mem := memory.NewGoAllocator()
	batches := pipelineBatches(mem, 16)
	defer releaseBatches(batches)
	cond := pipelineCondition(b)
	tc := &TaskContext{Alloc: mem}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := filterBatch(ctx, tc, batches[i%len(batches)], cond)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pipelineBatchRows, "ns/row")
}

func BenchmarkPipelineAggregate(b *testing.B) {
	mem := memory.NewGoAllocator()
	batches := pipelineBatches(mem, 16)
	defer releaseBatches(batches)
	cond := pipelineCondition(b)
	tc := &TaskContext{Alloc: mem}
	ctx := context.Background()
	var filtered []arrow.RecordBatch
	for _, batch := range batches {
		out, err := filterBatch(ctx, tc, batch, cond)
		if err != nil {
			b.Fatal(err)
		}
		filtered = append(filtered, out)
	}
	defer releaseBatches(filtered)
	i64, f64 := arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64
	src := &batchesOperator{schema: batches[0].Schema(), batches: filtered}
	agg, err := NewHashAggregate(src, []Expr{NewColumn(0, "k", i64)}, []string{"k"}, []AggregateSpec{
		{Name: "count", Func: "count"},
		{Name: "sum", Func: "sum", Args: []Expr{NewColumn(1, "v", f64)}},
		{Name: "avg", Func: "avg", Args: []Expr{NewColumn(2, "x", i64)}},
	}, AggregatePartial)
	if err != nil {
		b.Fatal(err)
	}
	rows := 0
	for _, f := range filtered {
		rows += int(f.NumRows())
	}
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
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows), "ns/row")
}

// batchesOperator is a one-partition source yielding fixed batches.
type batchesOperator struct {
	schema  *arrow.Schema
	batches []arrow.RecordBatch
}

func (o *batchesOperator) Schema() *arrow.Schema { return o.schema }
func (o *batchesOperator) Children() []Operator  { return nil }
func (o *batchesOperator) Partitions() int       { return 1 }
func (o *batchesOperator) String() string        { return "batches" }

func (o *batchesOperator) Execute(ctx context.Context, _ int, _ *TaskContext) (array.RecordReader, error) {
	i := 0
	pull := func() (arrow.RecordBatch, error) {
		if i >= len(o.batches) {
			return nil, nil
		}
		i++
		o.batches[i-1].Retain()
		return o.batches[i-1], nil
	}
	return stream.Pull(ctx, o.schema, pull, nil), nil
}
