package exec

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// aggPickOp says which input value a picking aggregate keeps.
type aggPickOp int

const (
	aggPickMin aggPickOp = iota
	aggPickMax
	aggPickAny // the first non-NULL value seen
)

// aggPickDef is MIN, MAX or ANY_VALUE over t. The result and the state are one column of type t,
// NULL for a group that saw no non-NULL value. Strings compare bytewise, as the engine's binary
// collation does; floats numerically; booleans false < true.
func aggPickDef(fn string, t arrow.DataType) (*aggregateDef, error) {
	op := map[string]aggPickOp{"min": aggPickMin, "max": aggPickMax, "any_value": aggPickAny}[fn]
	var newAcc func() aggAccumulator
	switch t.ID() {
	case arrow.NULL:
		newAcc = func() aggAccumulator { return &aggPickNull{} }
	case arrow.INT64:
		newAcc = func() aggAccumulator {
			return newAggPick(op, t, (*array.Int64).Int64Values, func(a, b int64) bool { return a < b })
		}
	case arrow.FLOAT64:
		newAcc = func() aggAccumulator {
			return newAggPick(op, t, (*array.Float64).Float64Values, func(a, b float64) bool { return a < b })
		}
	case arrow.DECIMAL128:
		newAcc = func() aggAccumulator {
			return newAggPick(op, t, (*array.Decimal128).Values, decimal128.Num.Less)
		}
	case arrow.DATE32:
		newAcc = func() aggAccumulator {
			return newAggPick(op, t, (*array.Date32).Date32Values, func(a, b arrow.Date32) bool { return a < b })
		}
	case arrow.TIMESTAMP:
		newAcc = func() aggAccumulator {
			return newAggPick(op, t, (*array.Timestamp).TimestampValues, func(a, b arrow.Timestamp) bool { return a < b })
		}
	case arrow.TIME64:
		newAcc = func() aggAccumulator {
			return newAggPick(op, t, (*array.Time64).Time64Values, func(a, b arrow.Time64) bool { return a < b })
		}
	case arrow.BOOL:
		newAcc = func() aggAccumulator {
			return newAggPick(op, t, aggBoolValues, func(a, b bool) bool { return !a && b })
		}
	case arrow.STRING:
		newAcc = func() aggAccumulator {
			p := newAggPick(op, t, aggStringValues, func(a, b string) bool { return a < b })
			p.keep = strings.Clone
			p.size = func(s string) int64 { return int64(len(s)) }
			return p
		}
	default:
		return nil, errs.Unsupportedf("%s over %s is not supported", strings.ToUpper(fn), t)
	}
	return &aggregateDef{result: t, states: []arrow.DataType{t}, newAcc: newAcc}, nil
}

// aggPick keeps, per group, the smallest, largest or first value of type T. A is the Arrow array
// type the values are read from.
type aggPick[T any, A arrow.Array] struct {
	op     aggPickOp
	dtype  arrow.DataType
	values func(A) []T
	less   func(a, b T) bool
	keep   func(T) T     // copies a value into the state (strings must not reference the input)
	size   func(T) int64 // the bytes a kept value holds beyond its slot (nil: none)
	bytes  int64         // sum of size over vals
	vals   []T
	seen   []bool
	zero   T
}

func newAggPick[T any, A arrow.Array](op aggPickOp, dtype arrow.DataType, values func(A) []T, less func(a, b T) bool) *aggPick[T, A] {
	return &aggPick[T, A]{op: op, dtype: dtype, values: values, less: less}
}

func (a *aggPick[T, A]) grow(n int) {
	a.vals = aggGrow(a.vals, n, a.zero)
	a.seen = aggGrow(a.seen, n, false)
}

func (a *aggPick[T, A]) update(groups []uint32, args []arrow.Array) error {
	arg := args[0]
	if arg.DataType().ID() == arrow.NULL {
		return nil
	}
	in, ok := arg.(A)
	if !ok {
		return errs.Internalf("%s aggregate cannot read %s", a.dtype, arg.DataType())
	}
	vals := a.values(in)
	nulls := arg.NullN() > 0
	for i, g := range groups {
		if !aggValid(arg, nulls, i) {
			continue
		}
		v := vals[i]
		replace := !a.seen[g] ||
			(a.op == aggPickMin && a.less(v, a.vals[g])) ||
			(a.op == aggPickMax && a.less(a.vals[g], v))
		if !replace {
			continue
		}
		if a.keep != nil {
			v = a.keep(v)
		}
		if a.size != nil {
			a.bytes += a.size(v) - a.size(a.vals[g])
		}
		a.vals[g], a.seen[g] = v, true
	}
	return nil
}

// heldBytes is what the state holds: a slot per group and the kept values' own bytes.
func (a *aggPick[T, A]) heldBytes() int64 { return a.bytes + int64(len(a.vals))*aggStateBytes }

// merge folds partial states, which have the same shape as the input.
func (a *aggPick[T, A]) merge(groups []uint32, states []arrow.Array) error {
	return a.update(groups, states)
}

func (a *aggPick[T, A]) finish(mem memory.Allocator) (arrow.Array, error) {
	return aggBuildArray(mem, a.dtype, a.vals, a.seen)
}

func (a *aggPick[T, A]) state(mem memory.Allocator) ([]arrow.Array, error) {
	arr, err := a.finish(mem)
	if err != nil {
		return nil, err
	}
	return []arrow.Array{arr}, nil
}

// aggBoolValues reads a boolean array into a Go slice (NULL slots read as false).
func aggBoolValues(a *array.Boolean) []bool {
	out := make([]bool, a.Len())
	for i := range out {
		out[i] = a.Value(i)
	}
	return out
}

// aggStringValues views a string array's values; they reference the array's buffers, so a value
// kept beyond the batch must be copied (aggPick.keep). NULL slots read as "".
func aggStringValues(a *array.String) []string {
	out := make([]string, a.Len())
	for i := range out {
		if a.IsValid(i) {
			out[i] = a.Value(i)
		}
	}
	return out
}

// aggPickNull is MIN/MAX/ANY_VALUE over the NULL type: always NULL.
type aggPickNull struct{ n int }

func (a *aggPickNull) grow(n int)                                    { a.n = max(a.n, n) }
func (a *aggPickNull) update(groups []uint32, _ []arrow.Array) error { return nil }
func (a *aggPickNull) merge(groups []uint32, _ []arrow.Array) error  { return nil }
func (a *aggPickNull) finish(mem memory.Allocator) (arrow.Array, error) {
	return array.MakeArrayOfNull(mem, arrow.Null, a.n), nil
}
func (a *aggPickNull) state(mem memory.Allocator) ([]arrow.Array, error) {
	arr, _ := a.finish(mem)
	return []arrow.Array{arr}, nil
}
