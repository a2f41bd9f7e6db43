package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// "in" (x, v1, …, vn) and "between" (x, lo, hi), comparing in one comparisonType for all
// operands as MySQL does (text that is no valid date compared as a date being the zero date,
// zeroDates).

func init() {
	RegisterScalar("in", resolveIn)
	RegisterScalar("between", resolveBetween)
}

// resolveIn: TRUE when x equals some vi; otherwise NULL when x or any vi is NULL; else FALSE.
func resolveIn(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("in", types, 2, -1); err != nil {
		return nil, nil, err
	}
	t, err := comparisonType("IN", types)
	if err != nil {
		return nil, nil, err
	}
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		if isNullType(t) {
			return array.MakeArrayOfNull(tc.Alloc, boolType, n), nil
		}
		cast, err := castAllTo(ctx, tc, args, t)
		if err != nil {
			return nil, err
		}
		defer releaseArrays(cast)
		zero := make([][]bool, len(args))
		for j := range args {
			zero[j] = zeroDates(args[j], cast[j])
		}
		x := cast[0]
		cmps := make([]func(i, j int) int, len(cast)-1)
		for j, v := range cast[1:] {
			if cmps[j], err = makeComparer(x, v); err != nil {
				return nil, err
			}
			cmps[j] = zeroAware(cmps[j], zero[0], zero[j+1])
		}
		list := cast[1:]
		return buildRows(newBoolBuilder(tc.Alloc), n, func(i int) (bool, bool, error) {
			if nullNotZero(x, zero[0], i) {
				return false, false, nil
			}
			sawNull := false
			for j, v := range list {
				if nullNotZero(v, zero[j+1], i) {
					sawNull = true
					continue
				}
				if cmps[j](i, i) == 0 {
					return true, true, nil
				}
			}
			return false, !sawNull, nil
		})
	}
	return k, boolType, nil
}

// resolveBetween: x >= lo AND x <= hi under three-valued logic.
func resolveBetween(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("between", types, 3, 3); err != nil {
		return nil, nil, err
	}
	t, err := comparisonType("BETWEEN", types)
	if err != nil {
		return nil, nil, err
	}
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		if isNullType(t) {
			return array.MakeArrayOfNull(tc.Alloc, boolType, n), nil
		}
		cast, err := castAllTo(ctx, tc, args, t)
		if err != nil {
			return nil, err
		}
		defer releaseArrays(cast)
		x, lo, hi := cast[0], cast[1], cast[2]
		zx, zlo, zhi := zeroDates(args[0], x), zeroDates(args[1], lo), zeroDates(args[2], hi)
		cmpLo, err := makeComparer(x, lo)
		if err != nil {
			return nil, err
		}
		cmpHi, err := makeComparer(x, hi)
		if err != nil {
			return nil, err
		}
		cmpLo, cmpHi = zeroAware(cmpLo, zx, zlo), zeroAware(cmpHi, zx, zhi)
		return buildRows(newBoolBuilder(tc.Alloc), n, func(i int) (bool, bool, error) {
			if nullNotZero(x, zx, i) {
				return false, false, nil
			}
			geOK, leOK := !nullNotZero(lo, zlo, i), !nullNotZero(hi, zhi, i)
			ge := geOK && cmpLo(i, i) >= 0
			le := leOK && cmpHi(i, i) <= 0
			v, ok := kleene("and", ge, geOK, le, leOK)
			return v, ok, nil
		})
	}
	return k, boolType, nil
}
