package exec

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Conversions between text and numbers with MySQL's lenient rules: a string used as a number
// is read up to the end of its longest numeric prefix (after leading spaces); a string with no
// numeric prefix is 0.

// numericPrefix returns the longest prefix of s (after leading whitespace) that reads as a
// decimal number: [sign] digits [. digits] [e [sign] digits]. It returns "" when there is none.
func numericPrefix(s string) string {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	start := i
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		j := i + 1
		frac := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
			frac++
		}
		if digits+frac > 0 {
			i = j
			digits += frac
		}
	}
	if digits == 0 {
		return ""
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k > j {
			i = k
		}
	}
	return s[start:i]
}

// parseFloatPrefix reads s as a double the way MySQL does in arithmetic and comparisons.
func parseFloatPrefix(s string) float64 {
	p := numericPrefix(s)
	if p == "" {
		return 0
	}
	v, err := strconv.ParseFloat(p, 64)
	if err != nil {
		// Out of range: ParseFloat returns ±Inf with the error, which MySQL clamps too.
		if math.IsInf(v, 0) {
			if v > 0 {
				return math.MaxFloat64
			}
			return -math.MaxFloat64
		}
		return 0
	}
	return v
}

// parseIntPrefix reads s as CAST(s AS SIGNED) does: the leading integer (sign and digits),
// clamped to the int64 range; 0 when there is none.
func parseIntPrefix(s string) int64 {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	var v uint64
	overflow := false
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d := uint64(s[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			overflow = true
			continue
		}
		v = v*10 + d
	}
	switch {
	case neg && (overflow || v > 1<<63):
		return math.MinInt64
	case neg:
		return -int64(v)
	case overflow || v > math.MaxInt64:
		return math.MaxInt64
	}
	return int64(v)
}

// parseDecimalText reads the numeric prefix of s as an unscaled decimal at the given scale,
// rounding half away from zero. ok is false when the value needs more than precision digits.
func parseDecimalText(s string, precision, scale int32) (n decimal128.Num, ok bool) {
	p := numericPrefix(s)
	if p == "" {
		return decimal128.Num{}, true
	}
	neg := false
	if p[0] == '+' || p[0] == '-' {
		neg = p[0] == '-'
		p = p[1:]
	}
	exp := 0
	if e := strings.IndexAny(p, "eE"); e >= 0 {
		x, err := strconv.Atoi(p[e+1:])
		if err != nil || x > 1000 || x < -1000 {
			if x > 0 || (err != nil && !strings.HasPrefix(p[e+1:], "-")) {
				return decimal128.Num{}, false
			}
			return decimal128.Num{}, true
		}
		exp = x
		p = p[:e]
	}
	mant := p
	if dot := strings.IndexByte(p, '.'); dot >= 0 {
		mant = p[:dot] + p[dot+1:]
		exp -= len(p) - dot - 1
	}
	mant = strings.TrimLeft(mant, "0")
	if mant == "" {
		return decimal128.Num{}, true
	}
	shift := exp + int(scale)
	if shift > 0 && len(mant)+shift > int(precision) {
		return decimal128.Num{}, false
	}
	var v big.Int
	v.SetString(mant, 10)
	if shift >= 0 {
		v.Mul(&v, pow10Big(shift))
	} else {
		div := pow10Big(-shift)
		var rem big.Int
		v.QuoRem(&v, div, &rem)
		rem.Lsh(&rem, 1)
		if rem.Cmp(div) >= 0 {
			v.Add(&v, big.NewInt(1))
		}
	}
	if neg {
		v.Neg(&v)
	}
	if v.BitLen() > 127 {
		return decimal128.Num{}, false
	}
	n = decimal128.FromBigInt(&v)
	return n, n.FitsInPrecision(precision)
}

func pow10Big(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// formatFloat prints a double as MySQL does: the shortest text that reads back as the same
// value, in positional notation unless the decimal exponent is below -4 or at least 15, then as
// mantissa 'e' exponent without a plus sign or padding (1e20, 1.5e-7).
func formatFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case v == 0:
		return "0"
	}
	exp := int(math.Floor(math.Log10(math.Abs(v))))
	// Log10 can be off by one near powers of ten; read the exponent from the shortest e-form.
	e := strconv.FormatFloat(v, 'e', -1, 64)
	at := strings.IndexByte(e, 'e')
	if x, err := strconv.Atoi(e[at+1:]); err == nil {
		exp = x
	}
	if exp < -4 || exp >= 15 {
		mant := e[:at]
		return mant + "e" + strconv.Itoa(exp)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// roundToEvenInt64 rounds a double to the nearest integer, halves to even, clamped to the int64
// range (NaN is 0). MySQL converts DOUBLE to an integer with rint() in the default rounding
// mode: CAST(2.5e0 AS SIGNED) is 2 and CAST(3.5e0 AS SIGNED) is 4 (a DECIMAL 2.5 gives 3).
func roundToEvenInt64(v float64) int64 {
	r := math.RoundToEven(v)
	switch {
	case math.IsNaN(r):
		return 0
	case r >= math.MaxInt64:
		return math.MaxInt64
	case r <= math.MinInt64:
		return math.MinInt64
	}
	return int64(r)
}
