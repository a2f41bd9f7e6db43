package slt

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"

	"github.com/cachedb/cachedb/internal/errs"
)

// Spellings of the two values that have no text of their own.
const (
	nullText  = "NULL"
	emptyText = "(empty)"
)

// FormatValue renders the value at row of col as the sqllogictest text for a column of the given
// type letter (I, R or T). NULL is "NULL" and an empty string is "(empty)" whatever the letter.
// It fails with an Unsupported error for Arrow types a SQL result cannot hold.
func FormatValue(col arrow.Array, row int, typ byte) (string, error) {
	// A column of Arrow's null type has no validity bitmap, so IsNull alone misses it.
	if col.IsNull(row) || col.DataType().ID() == arrow.NULL {
		return nullText, nil
	}
	v, err := sqlValueOf(col, row)
	if err != nil {
		return "", err
	}
	var s string
	switch typ {
	case 'I':
		s = formatInteger(v)
	case 'R':
		s = formatReal(v)
	default:
		s = formatText(v)
	}
	if s == "" {
		return emptyText, nil
	}
	return s, nil
}

// sqlValue is one non-NULL result value reduced to the few shapes SQL knows.
type sqlValue struct {
	kind  valueKind
	i     int64    // kindInt, kindBool (0/1)
	u     uint64   // kindUint
	f     float64  // kindFloat
	dec   *big.Int // kindDecimal: unscaled
	scale int32    // kindDecimal
	s     string   // kindString, kindTemporal (already MySQL text)
}

type valueKind int

const (
	kindInt valueKind = iota
	kindUint
	kindBool
	kindFloat
	kindDecimal
	kindString
	kindTemporal
)

func sqlValueOf(col arrow.Array, row int) (sqlValue, error) {
	switch c := col.(type) {
	case *array.Int8:
		return sqlValue{kind: kindInt, i: int64(c.Value(row))}, nil
	case *array.Int16:
		return sqlValue{kind: kindInt, i: int64(c.Value(row))}, nil
	case *array.Int32:
		return sqlValue{kind: kindInt, i: int64(c.Value(row))}, nil
	case *array.Int64:
		return sqlValue{kind: kindInt, i: c.Value(row)}, nil
	case *array.Uint8:
		return sqlValue{kind: kindUint, u: uint64(c.Value(row))}, nil
	case *array.Uint16:
		return sqlValue{kind: kindUint, u: uint64(c.Value(row))}, nil
	case *array.Uint32:
		return sqlValue{kind: kindUint, u: uint64(c.Value(row))}, nil
	case *array.Uint64:
		return sqlValue{kind: kindUint, u: c.Value(row)}, nil
	case *array.Boolean:
		v := sqlValue{kind: kindBool}
		if c.Value(row) {
			v.i = 1
		}
		return v, nil
	case *array.Float32:
		return sqlValue{kind: kindFloat, f: float64(c.Value(row))}, nil
	case *array.Float64:
		return sqlValue{kind: kindFloat, f: c.Value(row)}, nil
	case *array.Decimal128:
		n := c.Value(row)
		return sqlValue{kind: kindDecimal, dec: decimal128.Num.BigInt(n), scale: c.DataType().(*arrow.Decimal128Type).Scale}, nil
	case *array.Decimal256:
		n := c.Value(row)
		return sqlValue{kind: kindDecimal, dec: decimal256.Num.BigInt(n), scale: c.DataType().(*arrow.Decimal256Type).Scale}, nil
	case *array.String:
		return sqlValue{kind: kindString, s: c.Value(row)}, nil
	case *array.LargeString:
		return sqlValue{kind: kindString, s: c.Value(row)}, nil
	case *array.StringView:
		return sqlValue{kind: kindString, s: c.Value(row)}, nil
	case *array.Binary:
		return sqlValue{kind: kindString, s: string(c.Value(row))}, nil
	case *array.Date32:
		return sqlValue{kind: kindTemporal, s: c.Value(row).ToTime().Format(time.DateOnly)}, nil
	case *array.Timestamp:
		unit := c.DataType().(*arrow.TimestampType).Unit
		return sqlValue{kind: kindTemporal, s: formatTimestamp(c.Value(row).ToTime(unit))}, nil
	case *array.Time64:
		return sqlValue{kind: kindTemporal, s: formatTime(c.Value(row), c.DataType().(*arrow.Time64Type).Unit)}, nil
	case *array.Dictionary:
		return sqlValueOf(c.Dictionary(), c.GetValueIndex(row))
	}
	return sqlValue{}, errs.Unsupportedf("result column of Arrow type %s cannot be formatted", col.DataType())
}

// formatTimestamp prints a timestamp as MySQL does: seconds always, microseconds only when set.
func formatTimestamp(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond() == 0 {
		return t.Format(time.DateTime)
	}
	return t.Format("2006-01-02 15:04:05.000000")
}

// formatTime prints a TIME as MySQL does, [-]hh:mm:ss[.ffffff]: the value is a signed duration
// (-838:59:59 … 838:59:59), not only a time of day.
func formatTime(v arrow.Time64, unit arrow.TimeUnit) string {
	d := time.Duration(v) * unit.Multiplier()
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	s := fmt.Sprintf("%s%02d:%02d:%02d", sign, int64(d/time.Hour), int64(d/time.Minute)%60, int64(d/time.Second)%60)
	if frac := int64(d % time.Second / time.Microsecond); frac != 0 {
		s += fmt.Sprintf(".%06d", frac)
	}
	return s
}

// formatInteger renders a value in an I column. Integers and booleans print as %d.
// Other values go through integerColumnNonInteger.
func formatInteger(v sqlValue) string {
	switch v.kind {
	case kindInt, kindBool:
		return strconv.FormatInt(v.i, 10)
	case kindUint:
		return strconv.FormatUint(v.u, 10)
	default:
		return integerColumnNonInteger(v)
	}
}

// integerColumnNonInteger renders a non-integer value found in an I column.
//
// The corpus's expected results were regenerated against MySQL 8, where `/` yields a DECIMAL
// (for example `(a+b+c+d+e)/5` in select1.test is 112.0000). Those values are written in I
// columns as "%.3f" — "112.000" — exactly as an R column would print them: the hash of
// select1.test's `query IIIRI` at line 109 matches only with that rule (truncating to "112"
// does not). So: a DECIMAL with a non-zero scale and any float prints as %.3f; a DECIMAL with
// scale 0 (SUM over integers) is an integer and prints its digits. A string is read the way
// MySQL converts a string to a number (its leading numeric prefix, 0 when there is none) and
// printed as an integer when that prefix is one, as %.3f otherwise. A date or time prints as
// text.
func integerColumnNonInteger(v sqlValue) string {
	switch v.kind {
	case kindDecimal:
		if v.scale <= 0 {
			return decimalText(v.dec, v.scale)
		}
		return fmt.Sprintf("%.3f", decimalFloat(v.dec, v.scale))
	case kindFloat:
		return fmt.Sprintf("%.3f", v.f)
	case kindString:
		prefix := numericPrefix(v.s)
		if n, err := strconv.ParseInt(prefix, 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
		f, _ := strconv.ParseFloat(prefix, 64)
		return fmt.Sprintf("%.3f", f)
	default:
		return v.s
	}
}

// formatReal renders a value in an R column: any number as %.3f.
func formatReal(v sqlValue) string {
	switch v.kind {
	case kindInt, kindBool:
		return fmt.Sprintf("%.3f", float64(v.i))
	case kindUint:
		return fmt.Sprintf("%.3f", float64(v.u))
	case kindFloat:
		return fmt.Sprintf("%.3f", v.f)
	case kindDecimal:
		return fmt.Sprintf("%.3f", decimalFloat(v.dec, v.scale))
	case kindString:
		f, _ := strconv.ParseFloat(numericPrefix(v.s), 64)
		return fmt.Sprintf("%.3f", f)
	default:
		return v.s
	}
}

// formatText renders a value in a T column as a MySQL client prints it: integers plain,
// booleans 1/0, decimals with their scale, floats in shortest form. As in the reference
// implementation, every byte outside printable ASCII becomes '@'.
func formatText(v sqlValue) string {
	switch v.kind {
	case kindInt, kindBool:
		return strconv.FormatInt(v.i, 10)
	case kindUint:
		return strconv.FormatUint(v.u, 10)
	case kindFloat:
		return mysqlFloatText(v.f)
	case kindDecimal:
		return decimalText(v.dec, v.scale)
	default:
		return printableASCII(v.s)
	}
}

func printableASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] < ' ' || b[j] > '~' {
					b[j] = '@'
				}
			}
			return string(b)
		}
	}
	return s
}

// mysqlFloatText prints a DOUBLE the way MySQL does: the shortest digits that read back to the
// same value, plain notation for ordinary magnitudes and "1e20" style outside them.
func mysqlFloatText(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	abs := math.Abs(f)
	if abs == 0 || (abs >= 1e-15 && abs < 1e15) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	return strings.Replace(strings.Replace(s, "e+", "e", 1), "e-0", "e-", 1)
}

// decimalText prints an unscaled integer with the given scale, keeping trailing zeros
// (DECIMAL(10,4) 112 prints "112.0000").
func decimalText(unscaled *big.Int, scale int32) string {
	if scale <= 0 {
		if scale < 0 {
			unscaled = new(big.Int).Mul(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-scale)), nil))
		}
		return unscaled.String()
	}
	digits := new(big.Int).Abs(unscaled).String()
	if pad := int(scale) + 1 - len(digits); pad > 0 {
		digits = strings.Repeat("0", pad) + digits
	}
	cut := len(digits) - int(scale)
	sign := ""
	if unscaled.Sign() < 0 {
		sign = "-"
	}
	return sign + digits[:cut] + "." + digits[cut:]
}

func decimalFloat(unscaled *big.Int, scale int32) float64 {
	f, _ := strconv.ParseFloat(decimalText(unscaled, scale), 64)
	return f
}

// numericPrefix returns the longest prefix of s (after leading spaces) that reads as a number,
// which is what MySQL converts a string to in a numeric context; "0" when there is none.
func numericPrefix(s string) string {
	s = strings.TrimLeft(s, " \t\n\r")
	end := 0
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if digits > 0 {
		end = i
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
		if digits > 0 {
			end = i
		}
	}
	if end > 0 && i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k > j {
			end = k
		}
	}
	if end == 0 {
		return "0"
	}
	return s[:end]
}
