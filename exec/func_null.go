package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// NULL-aware choice functions: COALESCE, IFNULL, NULLIF, IF, GREATEST, LEAST. Results of
// COALESCE, IFNULL, IF, GREATEST and LEAST have the CommonType of the candidate values; NULLIF
// has its first argument's type.

func init() {
	RegisterScalar("coalesce", resolveCoalesce("coalesce", 1, -1))
	RegisterScalar("ifnull", resolveCoalesce("ifnull", 2, 2))
	RegisterScalar("nullif", resolveNullIf)
	RegisterScalar("if", resolveIf)
	RegisterScalar("greatest", resolveExtreme("greatest", 1))
	RegisterScalar("least", resolveExtreme("least", -1))
}

// resolveCoalesce: the first non-NULL argument, NULL when all are.
func resolveCoalesce(name string, min, max int) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(name, types, min, max); err != nil {
			return nil, nil, err
		}
		t, err := CommonType(types...)
		if err != nil {
			return nil, nil, err
		}
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			cast, err := castAllTo(ctx, tc, args, t)
			if err != nil {
				return nil, err
			}
			defer releaseArrays(cast)
			pick := make([]int32, n)
			for i := range pick {
				pick[i] = -1
				for j, a := range cast {
					if validAt(a, i) {
						pick[i] = int32(j)
						break
					}
				}
			}
			return gatherRows(ctx, tc, t, cast, pick)
		}
		return k, t, nil
	}
}

// resolveNullIf: NULL when a = b is true, else a.
func resolveNullIf(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("nullif", types, 2, 2); err != nil {
		return nil, nil, err
	}
	eq, _, err := ResolveScalar("=", types)
	if err != nil {
		return nil, nil, err
	}
	t := types[0]
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		same, err := eq(ctx, tc, args, n)
		if err != nil {
			return nil, err
		}
		defer same.Release()
		s := same.(*array.Boolean)
		pick := make([]int32, n)
		for i := range pick {
			if s.IsValid(i) && s.Value(i) {
				pick[i] = -1
			}
		}
		return gatherRows(ctx, tc, t, args[:1], pick)
	}
	return k, t, nil
}

// resolveIf: IF(cond, a, b) is a where cond is true to MySQL, else b.
func resolveIf(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("if", types, 3, 3); err != nil {
		return nil, nil, err
	}
	if err := checkTruthValues("IF", types[:1]); err != nil {
		return nil, nil, err
	}
	t, err := CommonType(types[1:]...)
	if err != nil {
		return nil, nil, err
	}
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		cond, err := PredicateToFilter(ctx, tc, args[0])
		if err != nil {
			return nil, err
		}
		defer cond.Release()
		cast, err := castAllTo(ctx, tc, args[1:], t)
		if err != nil {
			return nil, err
		}
		defer releaseArrays(cast)
		pick := make([]int32, n)
		for i := range pick {
			if !cond.Value(i) {
				pick[i] = 1
			}
		}
		return gatherRows(ctx, tc, t, cast, pick)
	}
	return k, t, nil
}

// resolveExtreme: GREATEST (sign 1) or LEAST (sign -1) of the arguments, NULL when any is NULL.
func resolveExtreme(name string, sign int) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(name, types, 2, -1); err != nil {
			return nil, nil, err
		}
		t, err := CommonType(types...)
		if err != nil {
			return nil, nil, err
		}
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			if isNullType(t) {
				return array.MakeArrayOfNull(tc.Alloc, t, n), nil
			}
			cast, err := castAllTo(ctx, tc, args, t)
			if err != nil {
				return nil, err
			}
			defer releaseArrays(cast)
			cmps := make([][]func(i, j int) int, len(cast))
			for a := range cast {
				cmps[a] = make([]func(i, j int) int, len(cast))
				for b := range cast {
					if cmps[a][b], err = makeComparer(cast[a], cast[b]); err != nil {
						return nil, err
					}
				}
			}
			pick := make([]int32, n)
			for i := range pick {
				if !allValid(cast, i) {
					pick[i] = -1
					continue
				}
				best := 0
				for j := 1; j < len(cast); j++ {
					if cmps[j][best](i, i)*sign > 0 {
						best = j
					}
				}
				pick[i] = int32(best)
			}
			return gatherRows(ctx, tc, t, cast, pick)
		}
		return k, t, nil
	}
}
