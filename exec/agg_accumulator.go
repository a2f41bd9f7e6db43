package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// aggAccumulator holds the running state of one aggregate for every group of one partition.
// Groups are dense ids 0..n-1 handed out by the group table. Implementations keep their state in
// typed Go slices indexed by group id and update them in typed loops over whole arrays, so there
// is one interface call per batch, not per row.
type aggAccumulator interface {
	// grow makes room for groups with ids < n; new groups start empty (no input seen).
	grow(n int)
	// update folds row i of args into group groups[i], for every i < len(groups). args have the
	// types the aggregate was resolved for (none for COUNT(*)).
	update(groups []uint32, args []arrow.Array) error
	// merge folds row i of the partial state columns (aggregateDef.states) into group groups[i].
	merge(groups []uint32, states []arrow.Array) error
	// finish builds the result column of groups 0..n-1 from mem; the caller releases it.
	finish(mem memory.Allocator) (arrow.Array, error)
	// state builds the state columns of groups 0..n-1 from mem; the caller releases them.
	state(mem memory.Allocator) ([]arrow.Array, error)
}

// aggGrow extends s to n elements, filling new ones with fill. Its capacity at least doubles
// when it grows: append grows a large slice by a quarter, so a table of a million groups, grown
// group by group, would be copied into some thirty slices of five times its final size in all.
func aggGrow[T any](s []T, n int, fill T) []T {
	if n <= len(s) {
		return s
	}
	if n > cap(s) {
		grown := make([]T, len(s), max(n, 2*cap(s), 64))
		copy(grown, s)
		s = grown
	}
	at := len(s)
	s = s[:n]
	for i := at; i < n; i++ {
		s[i] = fill
	}
	return s
}

// aggBuildArray builds an array of dtype from typed values and a validity slice (nil = all
// valid). T must match dtype's storage: int64, float64, decimal128.Num, bool, string,
// arrow.Date32 or arrow.Timestamp.
func aggBuildArray[T any](mem memory.Allocator, dtype arrow.DataType, vals []T, valid []bool) (arrow.Array, error) {
	if dtype.ID() == arrow.NULL {
		return array.MakeArrayOfNull(mem, dtype, len(vals)), nil
	}
	b := array.NewBuilder(mem, dtype)
	defer b.Release()
	b.Reserve(len(vals))
	ok := true
	switch bb := b.(type) {
	case *array.Int64Builder:
		v, isT := any(vals).([]int64)
		ok = isT && appendTyped(bb.AppendValues, v, valid)
	case *array.Float64Builder:
		v, isT := any(vals).([]float64)
		ok = isT && appendTyped(bb.AppendValues, v, valid)
	case *array.Decimal128Builder:
		v, isT := any(vals).([]decimal128.Num)
		ok = isT && appendTyped(bb.AppendValues, v, valid)
	case *array.BooleanBuilder:
		v, isT := any(vals).([]bool)
		ok = isT && appendTyped(bb.AppendValues, v, valid)
	case *array.StringBuilder:
		v, isT := any(vals).([]string)
		ok = isT && appendTyped(bb.AppendValues, v, valid)
	case *array.Date32Builder:
		v, isT := any(vals).([]arrow.Date32)
		ok = isT && appendTyped(bb.AppendValues, v, valid)
	case *array.TimestampBuilder:
		v, isT := any(vals).([]arrow.Timestamp)
		ok = isT && appendTyped(bb.AppendValues, v, valid)
	case *array.Time64Builder:
		v, isT := any(vals).([]arrow.Time64)
		ok = isT && appendTyped(bb.AppendValues, v, valid)
	default:
		ok = false
	}
	if !ok {
		return nil, errs.Internalf("cannot build an aggregate result of type %s", dtype)
	}
	return b.NewArray(), nil
}

// appendTyped calls a builder's AppendValues and reports success, so aggBuildArray's switch stays
// one line per type.
func appendTyped[T any](appendValues func([]T, []bool), vals []T, valid []bool) bool {
	appendValues(vals, valid)
	return true
}

// aggValid reports whether row i of arr is non-NULL; hasNulls is arr.NullN() > 0, hoisted out of
// the caller's loop.
func aggValid(arr arrow.Array, hasNulls bool, i int) bool {
	return !hasNulls || arr.IsValid(i)
}
