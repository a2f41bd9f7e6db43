package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// benchBatch is a batch of n rows: x int64 (i), d decimal(10,2) (i/100).
func benchBatch(mem memory.Allocator, n int) arrow.RecordBatch {
	xb := array.NewInt64Builder(mem)
	defer xb.Release()
	db := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 10, Scale: 2})
	defer db.Release()
	for i := 0; i < n; i++ {
		xb.Append(int64(i))
		db.Append(decimalNum(int64(i)))
	}
	x, d := xb.NewArray(), db.NewArray()
	defer x.Release()
	defer d.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: i64}, {Name: "d", Type: dec(10, 2)}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{x, d}, int64(n))
}

func benchExpr(b *testing.B, build func() (Expr, error)) {
	mem := memory.NewGoAllocator()
	batch := benchBatch(mem, DefaultBatchSize)
	defer batch.Release()
	e, err := build()
	if err != nil {
		b.Fatal(err)
	}
	tc := &TaskContext{Alloc: mem}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := e.Eval(context.Background(), tc, batch)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(DefaultBatchSize), "ns/row")
}

func BenchmarkAddInt(b *testing.B) {
	benchExpr(b, func() (Expr, error) { return NewCall("+", []Expr{NewColumn(0, "x", i64), lit(int64(1))}) })
}

func BenchmarkLessInt(b *testing.B) {
	benchExpr(b, func() (Expr, error) { return NewCall("<", []Expr{NewColumn(0, "x", i64), lit(int64(100))}) })
}

func BenchmarkDivideInt(b *testing.B) {
	benchExpr(b, func() (Expr, error) { return NewCall("/", []Expr{NewColumn(0, "x", i64), lit(int64(7))}) })
}

func BenchmarkMulDecimal(b *testing.B) {
	benchExpr(b, func() (Expr, error) {
		return NewCall("*", []Expr{NewColumn(1, "d", dec(10, 2)), NewColumn(1, "d", dec(10, 2))})
	})
}

func BenchmarkCase(b *testing.B) {
	benchExpr(b, func() (Expr, error) {
		cond, _ := NewCall("<", []Expr{NewColumn(0, "x", i64), lit(int64(4000))})
		return NewCase(nil, [][2]Expr{{cond, NewColumn(0, "x", i64)}}, lit(int64(0)), i64)
	})
}
