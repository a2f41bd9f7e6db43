package exec

import (
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Unscaled decimal128 helpers. A decimal value is an unscaled integer n and a scale s meaning
// n / 10^s; every helper rounds half away from zero, as MySQL does.

var (
	minInt64Num = decimal128.FromI64(math.MinInt64)
	maxInt64Num = decimal128.FromI64(math.MaxInt64)
)

// decimalFitsInt64 returns n as an int64 when it is in range.
func decimalFitsInt64(n decimal128.Num) (int64, bool) {
	if n.Less(minInt64Num) || n.Greater(maxInt64Num) {
		return 0, false
	}
	return int64(n.LowBits()), true
}

// decimalMulPow10 returns n * 10^k; ok is false when the result does not fit in 38 digits.
func decimalMulPow10(n decimal128.Num, k int32) (decimal128.Num, bool) {
	if k == 0 || n.Sign() == 0 {
		return n, true
	}
	if k > maxDecimalPrecision {
		return decimal128.Num{}, false
	}
	if n.Abs().Less(decimal128.GetScaleMultiplier(int(maxDecimalPrecision - k))) {
		return n.Mul(decimal128.GetScaleMultiplier(int(k))), true
	}
	return decimal128.Num{}, false
}

// decimalDivPow10 returns n / 10^k rounded half away from zero.
func decimalDivPow10(n decimal128.Num, k int32) decimal128.Num {
	if k == 0 {
		return n
	}
	if k > maxDecimalPrecision {
		return decimal128.Num{}
	}
	if v, ok := decimalFitsInt64(n); ok {
		if k >= 19 {
			return decimal128.Num{}
		}
		return decimal128.FromI64(divPow10Int64(v, int64(decimal128.GetScaleMultiplier(int(k)).LowBits())))
	}
	return n.ReduceScaleBy(k, true)
}

// rescaleDecimal changes the scale of an unscaled value from `from` to `to`, rounding when the
// scale shrinks; ok is false when the value no longer fits in 38 digits.
func rescaleDecimal(n decimal128.Num, from, to int32) (decimal128.Num, bool) {
	if to >= from {
		return decimalMulPow10(n, to-from)
	}
	return decimalDivPow10(n, from-to), true
}

// decimalToFloat64 returns n / 10^scale as the float64 nearest to it (ties to even), as MySQL
// converts DECIMAL to DOUBLE: 3.3 becomes the double closest to 3.3, not 33 * 0.1. When the
// unscaled value and the power of ten are both exact in a float64, one IEEE division is already
// correctly rounded; otherwise the decimal's text is parsed, which is.
func decimalToFloat64(n decimal128.Num, scale int32) float64 {
	const maxExact = 1 << 53
	if v, ok := decimalFitsInt64(n); ok && v > -maxExact && v < maxExact && scale >= -22 && scale <= 22 {
		if scale >= 0 {
			return float64(v) / exactPow10[scale]
		}
		return float64(v) * exactPow10[-scale]
	}
	f, err := strconv.ParseFloat(n.ToString(scale), 64)
	if err != nil {
		return n.ToFloat64(scale)
	}
	return f
}

// exactPow10 holds the powers of ten a float64 represents exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// maxDecimalOf returns the largest unscaled value of the given precision (10^p - 1).
func maxDecimalOf(precision int32) decimal128.Num {
	return decimal128.GetScaleMultiplier(int(precision)).Sub(decimal128.FromI64(1))
}

// clampDecimal limits n to the values DECIMAL(precision, ·) can hold, as MySQL's CAST does.
func clampDecimal(n decimal128.Num, precision int32) decimal128.Num {
	if n.FitsInPrecision(precision) {
		return n
	}
	m := maxDecimalOf(precision)
	if n.Sign() < 0 {
		return m.Negate()
	}
	return m
}

// decimalToInt64 rounds n / 10^scale to an integer, clamped to the int64 range.
func decimalToInt64(n decimal128.Num, scale int32) int64 {
	r := decimalDivPow10(n, scale)
	if v, ok := decimalFitsInt64(r); ok {
		return v
	}
	if r.Sign() < 0 {
		return math.MinInt64
	}
	return math.MaxInt64
}

// int64ToDecimal returns v as an unscaled value at the given scale; ok is false on overflow.
func int64ToDecimal(v int64, scale int32) (decimal128.Num, bool) {
	return decimalMulPow10(decimal128.FromI64(v), scale)
}

// floatToDecimal converts a double to DECIMAL(precision, scale) through its shortest decimal
// text (so 0.125 rounds to 0.13 as in MySQL); ok is false when it does not fit.
func floatToDecimal(v float64, precision, scale int32) (decimal128.Num, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return decimal128.Num{}, false
	}
	return parseDecimalText(strconv.FormatFloat(v, 'g', -1, 64), precision, scale)
}
