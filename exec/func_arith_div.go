package exec

import (
	"math"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/cachedb/cachedb/internal/errs"
)

// "/", "div", "%" and "neg". Division or remainder by zero is NULL (MySQL without strict
// ERROR_FOR_DIVISION_BY_ZERO in SELECT). "/" on exact operands is DECIMAL with the dividend's
// scale + 4 (div_precision_increment); DIV truncates toward zero and is BIGINT.

func init() {
	RegisterScalar("/", resolveDivide)
	RegisterScalar("div", resolveIntDivide)
	RegisterScalar("%", resolveMod)
	RegisterScalar("mod", resolveMod)
	RegisterScalar("neg", resolveNeg)
}

// divPrecisionIncrement is MySQL's div_precision_increment default.
const divPrecisionIncrement = 4

func resolveDivide(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("/", types, 2, 2); err != nil {
		return nil, nil, err
	}
	d, err := arithmeticDomain("/", types)
	if err != nil {
		return nil, nil, err
	}
	if d == domainFloat {
		f := func(x, y float64) (float64, bool, error) {
			if y == 0 {
				return 0, false, nil
			}
			return x / y, true, nil
		}
		k := binaryKernel(operandTypes(d, types), func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
			return binaryRows(newFloat64Builder(tc.Alloc), a, b, float64Values(a), float64Values(b), f)
		})
		return k, arrow.PrimitiveTypes.Float64, nil
	}
	operands := operandTypes(domainDecimal, types)
	p1, s1 := decimalOf(operands[0])
	_, s2 := decimalOf(operands[1])
	scale := min(s1+divPrecisionIncrement, maxDecimalScale)
	result := newDecimalType(p1-s1+s2+scale, scale)
	k := binaryKernel(operands, func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
		shift := scale - s1 + s2 // result unscaled = x * 10^shift / y
		f := func(x, y decimal128.Num) (decimal128.Num, bool, error) {
			if y.Sign() == 0 {
				return decimal128.Num{}, false, nil
			}
			r, ok := divDecimal(x, y, shift)
			if !ok {
				return decimal128.Num{}, false, decimalOutOfRange(a.DataType(), x, "/", b.DataType(), y)
			}
			return r, true, nil
		}
		return binaryRows(newDecimalBuilder(tc.Alloc, result), a, b, decimalValues(a), decimalValues(b), f)
	})
	return k, result, nil
}

// divDecimal returns x * 10^shift / y rounded half away from zero (y != 0); ok is false beyond 38
// digits.
func divDecimal(x, y decimal128.Num, shift int32) (decimal128.Num, bool) {
	if shift >= 0 && shift < 19 {
		xi, ok1 := decimalFitsInt64(x)
		yi, ok2 := decimalFitsInt64(y)
		if ok1 && ok2 {
			if n, ok := mulInt64(xi, int64(decimal128.GetScaleMultiplier(int(shift)).LowBits())); ok && yi != math.MinInt64 {
				q, r := n/yi, n%yi
				if absInt64(r)*2 >= absInt64(yi) && r != 0 {
					if (n < 0) != (yi < 0) {
						q--
					} else {
						q++
					}
				}
				return decimal128.FromI64(q), true
			}
		}
	}
	n := x.BigInt()
	if shift >= 0 {
		n.Mul(n, pow10Big(int(shift)))
	} else {
		n = roundQuo(n, pow10Big(int(-shift)))
	}
	q := roundQuo(n, y.BigInt())
	if q.BitLen() > 127 {
		return decimal128.Num{}, false
	}
	r := decimal128.FromBigInt(q)
	return r, r.FitsInPrecision(maxDecimalPrecision)
}

func absInt64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func resolveIntDivide(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("div", types, 2, 2); err != nil {
		return nil, nil, err
	}
	d, err := arithmeticDomain("div", types)
	if err != nil {
		return nil, nil, err
	}
	operands := operandTypes(d, types)
	var k Kernel
	switch d {
	case domainInt:
		f := func(x, y int64) (int64, bool, error) {
			if y == 0 {
				return 0, false, nil
			}
			if x == math.MinInt64 && y == -1 {
				return 0, false, bigintOutOfRange(x, "DIV", y)
			}
			return x / y, true, nil
		}
		k = binaryKernel(operands, func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
			return binaryRows(newInt64Builder(tc.Alloc), a, b, int64Values(a), int64Values(b), f)
		})
	case domainFloat:
		f := func(x, y float64) (int64, bool, error) {
			if y == 0 {
				return 0, false, nil
			}
			q := math.Trunc(x / y)
			if math.IsNaN(q) || q >= math.MaxInt64 || q < math.MinInt64 {
				return 0, false, errs.Invalidf("BIGINT value is out of range in '(%s DIV %s)'", formatFloat(x), formatFloat(y))
			}
			return int64(q), true, nil
		}
		k = binaryKernel(operands, func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
			return binaryRows(newInt64Builder(tc.Alloc), a, b, float64Values(a), float64Values(b), f)
		})
	default:
		k = binaryKernel(operands, func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
			s1, s2 := decimalScale(a.DataType()), decimalScale(b.DataType())
			f := func(x, y decimal128.Num) (int64, bool, error) {
				if y.Sign() == 0 {
					return 0, false, nil
				}
				// x/10^s1 DIV y/10^s2 = trunc(x * 10^s2 / (y * 10^s1)).
				n := new(big.Int).Mul(x.BigInt(), pow10Big(int(s2)))
				m := new(big.Int).Mul(y.BigInt(), pow10Big(int(s1)))
				q := n.Quo(n, m)
				if !q.IsInt64() {
					return 0, false, errs.Invalidf("BIGINT value is out of range in '(%s DIV %s)'", x.ToString(s1), y.ToString(s2))
				}
				return q.Int64(), true, nil
			}
			return binaryRows(newInt64Builder(tc.Alloc), a, b, decimalValues(a), decimalValues(b), f)
		})
	}
	return k, arrow.PrimitiveTypes.Int64, nil
}

func resolveMod(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("%", types, 2, 2); err != nil {
		return nil, nil, err
	}
	d, err := arithmeticDomain("%", types)
	if err != nil {
		return nil, nil, err
	}
	operands := operandTypes(d, types)
	switch d {
	case domainInt:
		f := func(x, y int64) (int64, bool, error) {
			if y == 0 {
				return 0, false, nil
			}
			if y == -1 {
				return 0, true, nil
			}
			return x % y, true, nil
		}
		return binaryKernel(operands, func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
			return binaryRows(newInt64Builder(tc.Alloc), a, b, int64Values(a), int64Values(b), f)
		}), arrow.PrimitiveTypes.Int64, nil
	case domainFloat:
		f := func(x, y float64) (float64, bool, error) {
			if y == 0 {
				return 0, false, nil
			}
			return math.Mod(x, y), true, nil
		}
		return binaryKernel(operands, func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
			return binaryRows(newFloat64Builder(tc.Alloc), a, b, float64Values(a), float64Values(b), f)
		}), arrow.PrimitiveTypes.Float64, nil
	}
	p1, s1 := decimalOf(operands[0])
	p2, s2 := decimalOf(operands[1])
	s := max(s1, s2)
	result := newDecimalType(max(p1-s1, p2-s2)+s, s)
	return binaryKernel(operands, func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
		f := func(x, y decimal128.Num) (decimal128.Num, bool, error) {
			if y.Sign() == 0 {
				return decimal128.Num{}, false, nil
			}
			n := new(big.Int).Mul(x.BigInt(), pow10Big(int(s-s1)))
			m := new(big.Int).Mul(y.BigInt(), pow10Big(int(s-s2)))
			return decimal128.FromBigInt(n.Rem(n, m)), true, nil
		}
		return binaryRows(newDecimalBuilder(tc.Alloc, result), a, b, decimalValues(a), decimalValues(b), f)
	}), result, nil
}

func resolveNeg(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("neg", types, 1, 1); err != nil {
		return nil, nil, err
	}
	d, err := arithmeticDomain("-", types)
	if err != nil {
		return nil, nil, err
	}
	t := operandType(d, types[0])
	return unaryKernel(t, func(tc *TaskContext, a arrow.Array) (arrow.Array, error) {
		return negate(tc, a)
	}), t, nil
}

// negate computes -a for int64 (MIN is out of range), float64 and decimal arrays.
func negate(tc *TaskContext, a arrow.Array) (arrow.Array, error) {
	switch a.DataType().ID() {
	case arrow.INT64:
		v := int64Values(a)
		return buildRows(newInt64Builder(tc.Alloc), a.Len(), func(i int) (int64, bool, error) {
			if a.IsNull(i) {
				return 0, false, nil
			}
			if v[i] == math.MinInt64 {
				return 0, false, errs.Invalidf("BIGINT value is out of range in '-(%d)'", v[i])
			}
			return -v[i], true, nil
		})
	case arrow.FLOAT64:
		v := float64Values(a)
		return mapValid(newFloat64Builder(tc.Alloc), a, func(i int) float64 { return -v[i] }), nil
	default:
		v := decimalValues(a)
		return mapValid(newDecimalBuilder(tc.Alloc, a.DataType()), a, func(i int) decimal128.Num { return v[i].Negate() }), nil
	}
}
