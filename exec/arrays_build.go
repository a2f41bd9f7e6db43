package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// builderOf is an Arrow builder that appends values of Go type T (Int64Builder for int64,
// StringBuilder for string, …). Kernels are written once against it and instantiated per type,
// so values are never boxed into interfaces row by row.
type builderOf[T any] interface {
	array.Builder
	Append(T)
}

// rowFunc computes row i of a result: its value, whether it is non-NULL, and an error that
// stops the whole computation.
type rowFunc[T any] func(i int) (T, bool, error)

// buildRows fills b with f(0) … f(n-1) and returns the finished array; b is released.
func buildRows[T any, B builderOf[T]](b B, n int, f rowFunc[T]) (arrow.Array, error) {
	defer b.Release()
	b.Reserve(n)
	for i := 0; i < n; i++ {
		v, ok, err := f(i)
		if err != nil {
			return nil, err
		}
		if ok {
			b.Append(v)
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray(), nil
}

// mapValid fills b with f(i) for every row where src is non-NULL and NULL elsewhere.
func mapValid[T any, B builderOf[T]](b B, src arrow.Array, f func(i int) T) arrow.Array {
	defer b.Release()
	n := src.Len()
	b.Reserve(n)
	for i := 0; i < n; i++ {
		if validAt(src, i) {
			b.Append(f(i))
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray()
}

// Builders for the canonical result types.

func newInt64Builder(mem memory.Allocator) *array.Int64Builder { return array.NewInt64Builder(mem) }

func newFloat64Builder(mem memory.Allocator) *array.Float64Builder {
	return array.NewFloat64Builder(mem)
}

func newBoolBuilder(mem memory.Allocator) *array.BooleanBuilder {
	return array.NewBooleanBuilder(mem)
}

func newStringBuilder(mem memory.Allocator) *array.StringBuilder {
	return array.NewStringBuilder(mem)
}

func newDecimalBuilder(mem memory.Allocator, t arrow.DataType) *array.Decimal128Builder {
	return array.NewDecimal128Builder(mem, t.(*arrow.Decimal128Type))
}

var _ builderOf[decimal128.Num] = (*array.Decimal128Builder)(nil)
