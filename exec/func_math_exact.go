package exec

import (
	"context"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/cachedb/cachedb/internal/errs"
)

// Math functions that keep exact types: ABS, SIGN, CEIL/CEILING, FLOOR, ROUND, TRUNCATE. BIGINT
// stays BIGINT, DECIMAL stays DECIMAL, anything else is DOUBLE (strings are read as numbers).
//
// ROUND(x, d) and TRUNCATE(x, d) on a DECIMAL keep the argument's scale here (the value is rounded
// to d places, then written at the original scale), because a kernel's type cannot depend on the
// value of d; the SQL binder narrows the scale to d when d is a constant, as MySQL types it.
// ROUND(x) on a DECIMAL has scale 0. Exact values round half away from zero, doubles
// half to even (MySQL uses rint).

func init() {
	RegisterScalar("abs", resolveExact("abs", 1, 1, exactAbs))
	RegisterScalar("sign", resolveSign)
	RegisterScalar("ceil", resolveExact("ceil", 1, 1, exactCeilFloor(true)))
	RegisterScalar("ceiling", resolveExact("ceiling", 1, 1, exactCeilFloor(true)))
	RegisterScalar("floor", resolveExact("floor", 1, 1, exactCeilFloor(false)))
	RegisterScalar("round", resolveExact("round", 1, 2, exactRound(false)))
	RegisterScalar("truncate", resolveExact("truncate", 2, 2, exactRound(true)))
}

// exactImpl computes a function on x (cast to the operand type) and optional int64 argument d;
// it returns the result type for the operand type, and the computation.
type exactImpl func(operand arrow.DataType, nargs int) (arrow.DataType, func(tc *TaskContext, x arrow.Array, d *array.Int64) (arrow.Array, error))

func resolveExact(name string, min, max int, impl exactImpl) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(name, types, min, max); err != nil {
			return nil, nil, err
		}
		if _, err := arithmeticDomain(name, types); err != nil {
			return nil, nil, err
		}
		dom, err := arithmeticDomain(name, types[:1])
		if err != nil {
			return nil, nil, err
		}
		operand := operandType(dom, types[0])
		t, f := impl(operand, len(types))
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			x, err := CastArray(ctx, tc, args[0], operand)
			if err != nil {
				return nil, err
			}
			defer x.Release()
			d, err := int64Arg(ctx, tc, args, 1)
			if err != nil {
				return nil, err
			}
			if d != nil {
				defer d.Release()
			}
			return f(tc, x, d)
		}
		return k, t, nil
	}
}

// validWithD reports whether row i of x and of the optional d are non-NULL.
func validWithD(x arrow.Array, d *array.Int64, i int) bool {
	return x.IsValid(i) && (d == nil || d.IsValid(i))
}

func exactAbs(operand arrow.DataType, _ int) (arrow.DataType, func(*TaskContext, arrow.Array, *array.Int64) (arrow.Array, error)) {
	return operand, func(tc *TaskContext, x arrow.Array, _ *array.Int64) (arrow.Array, error) {
		switch operand.ID() {
		case arrow.INT64:
			v := int64Values(x)
			return buildRows(newInt64Builder(tc.Alloc), x.Len(), func(i int) (int64, bool, error) {
				if x.IsNull(i) {
					return 0, false, nil
				}
				if v[i] == math.MinInt64 {
					return 0, false, errs.Invalidf("BIGINT value is out of range in 'abs(%d)'", v[i])
				}
				return absInt64(v[i]), true, nil
			})
		case arrow.FLOAT64:
			v := float64Values(x)
			return mapValid(newFloat64Builder(tc.Alloc), x, func(i int) float64 { return math.Abs(v[i]) }), nil
		}
		v := decimalValues(x)
		return mapValid(newDecimalBuilder(tc.Alloc, operand), x, func(i int) decimal128.Num { return v[i].Abs() }), nil
	}
}

func resolveSign(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("sign", types, 1, 1); err != nil {
		return nil, nil, err
	}
	dom, err := arithmeticDomain("sign", types)
	if err != nil {
		return nil, nil, err
	}
	operand := operandType(dom, types[0])
	return unaryKernel(operand, func(tc *TaskContext, x arrow.Array) (arrow.Array, error) {
		b := newInt64Builder(tc.Alloc)
		switch operand.ID() {
		case arrow.INT64:
			v := int64Values(x)
			return mapValid(b, x, func(i int) int64 { return int64(sign3(v[i] > 0, v[i] < 0)) }), nil
		case arrow.FLOAT64:
			v := float64Values(x)
			return mapValid(b, x, func(i int) int64 { return int64(sign3(v[i] > 0, v[i] < 0)) }), nil
		}
		v := decimalValues(x)
		return mapValid(b, x, func(i int) int64 { return int64(v[i].Sign()) }), nil
	}), arrow.PrimitiveTypes.Int64, nil
}

func sign3(pos, neg bool) int {
	switch {
	case pos:
		return 1
	case neg:
		return -1
	}
	return 0
}

func exactCeilFloor(ceil bool) exactImpl {
	return func(operand arrow.DataType, _ int) (arrow.DataType, func(*TaskContext, arrow.Array, *array.Int64) (arrow.Array, error)) {
		switch operand.ID() {
		case arrow.INT64:
			return operand, func(tc *TaskContext, x arrow.Array, _ *array.Int64) (arrow.Array, error) {
				x.Retain()
				return x, nil
			}
		case arrow.FLOAT64:
			return operand, func(tc *TaskContext, x arrow.Array, _ *array.Int64) (arrow.Array, error) {
				v := float64Values(x)
				g := math.Floor
				if ceil {
					g = math.Ceil
				}
				return mapValid(newFloat64Builder(tc.Alloc), x, func(i int) float64 { return g(v[i]) }), nil
			}
		}
		p, s := decimalOf(operand)
		t := newDecimalType(p-s+1, 0)
		return t, func(tc *TaskContext, x arrow.Array, _ *array.Int64) (arrow.Array, error) {
			v := decimalValues(x)
			return mapValid(newDecimalBuilder(tc.Alloc, t), x, func(i int) decimal128.Num {
				q, r := decimalQuoRemPow10(v[i], s)
				if ceil && r.Sign() > 0 {
					q = q.Add(decimal128.FromI64(1))
				} else if !ceil && r.Sign() < 0 {
					q = q.Sub(decimal128.FromI64(1))
				}
				return q
			}), nil
		}
	}
}

// decimalQuoRemPow10 divides n by 10^k, truncating toward zero.
func decimalQuoRemPow10(n decimal128.Num, k int32) (q, r decimal128.Num) {
	if k == 0 {
		return n, decimal128.Num{}
	}
	return n.Div(decimal128.GetScaleMultiplier(int(k)))
}
