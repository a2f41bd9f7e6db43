package exec

import (
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/cachedb/cachedb/internal/errs"
)

// Decimal kernels of "+", "-", "*": operands are unscaled decimal128 values; results are exact
// (products wider than scale 30 round half away from zero) and values beyond 38 digits are an
// InvalidInput error.

func decimalOutOfRange(a arrow.DataType, x decimal128.Num, op string, b arrow.DataType, y decimal128.Num) error {
	return errs.Invalidf("DECIMAL value is out of range in '(%s %s %s)'",
		x.ToString(decimalScale(a)), op, y.ToString(decimalScale(b)))
}

func decimalArith(op string, result *arrow.Decimal128Type) func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
	return func(tc *TaskContext, a, b arrow.Array) (arrow.Array, error) {
		if out, ok := decimalArithInt64(tc, op, result, a, b); ok {
			return out, nil
		}
		s1, s2, s := decimalScale(a.DataType()), decimalScale(b.DataType()), result.Scale
		var f func(x, y decimal128.Num) (decimal128.Num, bool, error)
		fail := func(x, y decimal128.Num) (decimal128.Num, bool, error) {
			return decimal128.Num{}, false, decimalOutOfRange(a.DataType(), x, op, b.DataType(), y)
		}
		switch op {
		case "+", "-":
			f = func(x, y decimal128.Num) (decimal128.Num, bool, error) {
				xs, ok1 := decimalMulPow10(x, s-s1)
				ys, ok2 := decimalMulPow10(y, s-s2)
				if !ok1 || !ok2 {
					return fail(x, y)
				}
				if op == "-" {
					ys = ys.Negate()
				}
				r := xs.Add(ys)
				// Both terms are below 10^38 in magnitude, so a sign flip is the only overflow.
				if xs.Sign() == ys.Sign() && xs.Sign() != 0 && r.Sign() != xs.Sign() || !r.FitsInPrecision(maxDecimalPrecision) {
					return fail(x, y)
				}
				return r, true, nil
			}
		default:
			f = func(x, y decimal128.Num) (decimal128.Num, bool, error) {
				r, ok := mulDecimal(x, y, s1+s2-s)
				if !ok {
					return fail(x, y)
				}
				return r, true, nil
			}
		}
		return binaryRows(newDecimalBuilder(tc.Alloc, result), a, b, decimalValues(a), decimalValues(b), f)
	}
}

// mulDecimal returns x*y with `drop` fewer decimal places (rounded); ok is false beyond 38 digits.
func mulDecimal(x, y decimal128.Num, drop int32) (decimal128.Num, bool) {
	if xi, ok := decimalFitsInt64(x); ok {
		if yi, ok := decimalFitsInt64(y); ok {
			if p, ok := mulInt64(xi, yi); ok {
				r := decimalDivPow10(decimal128.FromI64(p), drop)
				return r, r.FitsInPrecision(maxDecimalPrecision)
			}
			// |x*y| < 2^126: the 128-bit product is exact.
			r := decimalDivPow10(x.Mul(y), drop)
			return r, r.FitsInPrecision(maxDecimalPrecision)
		}
	}
	p := new(big.Int).Mul(x.BigInt(), y.BigInt())
	if drop > 0 {
		p = roundQuo(p, pow10Big(int(drop)))
	}
	if p.BitLen() > 127 {
		return decimal128.Num{}, false
	}
	r := decimal128.FromBigInt(p)
	return r, r.FitsInPrecision(maxDecimalPrecision)
}

// roundQuo returns n/d rounded half away from zero.
func roundQuo(n, d *big.Int) *big.Int {
	q, r := new(big.Int).QuoRem(n, d, new(big.Int))
	r.Abs(r).Lsh(r, 1)
	if r.Cmp(new(big.Int).Abs(d)) >= 0 {
		if (n.Sign() < 0) != (d.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}
