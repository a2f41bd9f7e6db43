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

// buildRows fills b with f(0) … f(n-1) and returns the finished array; b is released. Results
// of fixed width (BIGINT, DOUBLE, DECIMAL) bypass the builder and are written in place.
func buildRows[T any, B builderOf[T]](b B, n int, f rowFunc[T]) (arrow.Array, error) {
	defer b.Release()
	switch fb := any(b).(type) {
	case int64Out:
		return buildFixed(fb.mem, arrow.PrimitiveTypes.Int64, n, any(f).(rowFunc[int64]))
	case float64Out:
		return buildFixed(fb.mem, arrow.PrimitiveTypes.Float64, n, any(f).(rowFunc[float64]))
	case decimalOut:
		return buildFixed(fb.mem, fb.Type(), n, any(f).(rowFunc[decimal128.Num]))
	}
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
	isNull := src.DataType().ID() == arrow.NULL
	out, _ := buildRows(b, src.Len(), func(i int) (T, bool, error) {
		if isNull || src.IsNull(i) {
			var zero T
			return zero, false, nil
		}
		return f(i), true, nil
	})
	return out
}

// Builders for the canonical result types.

// int64Out, float64Out and decimalOut are builders that remember their allocator, so that
// buildRows can write fixed-width results without going through the builder.
type (
	int64Out struct {
		*array.Int64Builder
		mem memory.Allocator
	}
	float64Out struct {
		*array.Float64Builder
		mem memory.Allocator
	}
	decimalOut struct {
		*array.Decimal128Builder
		mem memory.Allocator
	}
)

func newInt64Builder(mem memory.Allocator) int64Out {
	return int64Out{array.NewInt64Builder(mem), mem}
}

func newFloat64Builder(mem memory.Allocator) float64Out {
	return float64Out{array.NewFloat64Builder(mem), mem}
}

func newBoolBuilder(mem memory.Allocator) *array.BooleanBuilder {
	return array.NewBooleanBuilder(mem)
}

func newStringBuilder(mem memory.Allocator) *array.StringBuilder {
	return array.NewStringBuilder(mem)
}

func newDecimalBuilder(mem memory.Allocator, t arrow.DataType) decimalOut {
	return decimalOut{array.NewDecimal128Builder(mem, t.(*arrow.Decimal128Type)), mem}
}

var _ builderOf[decimal128.Num] = decimalOut{}
