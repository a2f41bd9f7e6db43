package exec

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/cachedb/cachedb/internal/errs"
)

// ROUND and TRUNCATE (see func_math_exact.go for the result types).

// exactRound implements ROUND (truncate=false) and TRUNCATE (truncate=true).
func exactRound(truncate bool) exactImpl {
	return func(operand arrow.DataType, nargs int) (arrow.DataType, func(*TaskContext, arrow.Array, *array.Int64) (arrow.Array, error)) {
		switch operand.ID() {
		case arrow.INT64:
			return operand, func(tc *TaskContext, x arrow.Array, d *array.Int64) (arrow.Array, error) {
				v := int64Values(x)
				return buildRows(newInt64Builder(tc.Alloc), x.Len(), func(i int) (int64, bool, error) {
					if !validWithD(x, d, i) {
						return 0, false, nil
					}
					if d == nil || d.Value(i) >= 0 {
						return v[i], true, nil
					}
					// Clamped before negating: -math.MinInt64 is itself negative.
					return roundInt64(v[i], -max(d.Value(i), -19), truncate)
				})
			}
		case arrow.FLOAT64:
			return operand, func(tc *TaskContext, x arrow.Array, d *array.Int64) (arrow.Array, error) {
				v := float64Values(x)
				return buildRows(newFloat64Builder(tc.Alloc), x.Len(), func(i int) (float64, bool, error) {
					if !validWithD(x, d, i) {
						return 0, false, nil
					}
					var places int64
					if d != nil {
						places = d.Value(i)
					}
					return roundFloat(v[i], places, truncate), true, nil
				})
			}
		}
		p, s := decimalOf(operand)
		t := newDecimalType(p-s+1, 0)
		if nargs == 2 {
			t = newDecimalType(p+1, s)
			if truncate {
				t = newDecimalType(p, s)
			}
		}
		return t, func(tc *TaskContext, x arrow.Array, d *array.Int64) (arrow.Array, error) {
			v := decimalValues(x)
			return buildRows(newDecimalBuilder(tc.Alloc, t), x.Len(), func(i int) (decimal128.Num, bool, error) {
				if !validWithD(x, d, i) {
					return decimal128.Num{}, false, nil
				}
				if d == nil {
					return decimalDivPow10(v[i], s), true, nil
				}
				places := d.Value(i)
				if places >= int64(s) {
					return v[i], true, nil
				}
				// Compared before subtracting, which could overflow for a huge negative places.
				if places < int64(s)-maxDecimalPrecision {
					return decimal128.Num{}, true, nil
				}
				drop := int64(s) - places
				var q decimal128.Num
				if truncate {
					q, _ = decimalQuoRemPow10(v[i], int32(drop))
				} else {
					q = decimalDivPow10(v[i], int32(drop))
				}
				r, ok := decimalMulPow10(q, int32(drop))
				if !ok || !r.FitsInPrecision(t.Precision) {
					return decimal128.Num{}, false, errs.Invalidf("DECIMAL value is out of range in 'round(%s, %d)'", v[i].ToString(s), places)
				}
				return r, true, nil
			})
		}
	}
}

// roundInt64 rounds (or truncates) v to a multiple of 10^k, k > 0.
func roundInt64(v, k int64, truncate bool) (int64, bool, error) {
	if k >= 19 || k < 0 { // k < 0: the negation of the smallest BIGINT overflowed
		return 0, true, nil
	}
	m := int64(decimal128.GetScaleMultiplier(int(k)).LowBits())
	q, r := v/m, v%m
	if !truncate && absInt64(r) >= (m+1)/2 {
		if v < 0 {
			q--
		} else {
			q++
		}
	}
	out, ok := mulInt64(q, m)
	if !ok {
		return 0, false, errs.Invalidf("BIGINT value is out of range in 'round(%d, %d)'", v, -k)
	}
	return out, true, nil
}

// roundFloat rounds a double to the given number of decimal places, halves to even (as rint
// does), or truncates toward zero.
func roundFloat(x float64, places int64, truncate bool) float64 {
	g := math.RoundToEven
	if truncate {
		g = math.Trunc
	}
	if places > 308 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	if places < -308 {
		return 0
	}
	if places >= 0 {
		f := math.Pow(10, float64(places))
		r := g(x*f) / f
		if math.IsInf(r, 0) || math.IsNaN(r) {
			return x
		}
		return r
	}
	f := math.Pow(10, float64(-places))
	return g(x/f) * f
}
