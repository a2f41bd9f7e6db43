package exec

import (
	"context"
	"math"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// StoreArray converts a to the type of table column `column` for INSERT and UPDATE, with the
// rules of MySQL's strict mode (the default in MySQL 8) where CAST is lenient: a string that is
// not a whole number fails ("Incorrect integer value: 'x' for column 'c' at row 1"; a number
// followed by other text, '12abc', is "Data truncated"), a value outside the column's range
// fails ("Out of range value for column 'c' at row 1"), and so does a string that is not a date.
// Leading and trailing spaces are allowed, as MySQL allows them. firstRow is the statement's
// 1-based number of a's first row. Conversions to strings are never refused.
func StoreArray(ctx context.Context, tc *TaskContext, a arrow.Array, to arrow.DataType, column string, firstRow int64) (arrow.Array, error) {
	out, err := CastArray(ctx, tc, a, to)
	if err != nil {
		return nil, err
	}
	if isStringType(to) {
		return out, nil
	}
	for i := 0; i < a.Len(); i++ {
		if !validAt(a, i) {
			continue
		}
		if err := checkStored(a, out, i, to, column, firstRow+int64(i)); err != nil {
			out.Release()
			return nil, err
		}
	}
	if text, ok := a.(*array.String); ok && to.ID() == arrow.INT64 {
		// CAST(' 2.5' AS SIGNED) is 2, but MySQL stores '2.5' in an integer column as 3.
		out.Release()
		return buildRows(newInt64Builder(tc.Alloc), a.Len(), func(i int) (int64, bool, error) {
			if text.IsNull(i) {
				return 0, false, nil
			}
			return roundedInt64(text.Value(i)), true, nil
		})
	}
	return out, nil
}

// roundedInt64 is a number already checked by checkStored, rounded half away from zero.
func roundedInt64(s string) int64 {
	v, _ := exactFloat().SetString(numericPrefix(strings.Trim(s, " \t\n\r")))
	half := big.NewFloat(0.5)
	if v.Sign() < 0 {
		v.Sub(v, half)
	} else {
		v.Add(v, half)
	}
	n, _ := v.Int64() // truncates toward zero
	return n
}

// checkStored reports the strict-mode error of storing row i of a (converted: out) in column.
func checkStored(a, out arrow.Array, i int, to arrow.DataType, column string, row int64) error {
	text, isText := a.(*array.String)
	if isTemporalType(to) {
		if out.IsValid(i) {
			return nil
		}
		what := "datetime"
		if to.ID() == arrow.DATE32 {
			what = "date"
		}
		return errs.Invalidf("Incorrect %s value: '%s' for column '%s' at row %d", what, valueText(a, i), column, row)
	}
	var v *big.Float
	switch {
	case isText:
		s := text.Value(i)
		trimmed := strings.Trim(s, " \t\n\r")
		p := numericPrefix(trimmed)
		switch {
		case p == "" && to.ID() == arrow.FLOAT64:
			return errs.Invalidf("Data truncated for column '%s' at row %d", column, row)
		case p == "":
			kind := "integer"
			if to.ID() == arrow.DECIMAL128 {
				kind = "decimal"
			}
			return errs.Invalidf("Incorrect %s value: '%s' for column '%s' at row %d", kind, s, column, row)
		case p != trimmed:
			return errs.Invalidf("Data truncated for column '%s' at row %d", column, row)
		}
		var ok bool
		if v, ok = exactFloat().SetString(p); !ok {
			return outOfRange(column, row) // an exponent too large for big.Float
		}
	case a.DataType().ID() == arrow.INT64:
		v = exactFloat().SetInt64(a.(*array.Int64).Value(i))
	case a.DataType().ID() == arrow.FLOAT64:
		f := a.(*array.Float64).Value(i)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return outOfRange(column, row)
		}
		v = exactFloat().SetFloat64(f)
	case a.DataType().ID() == arrow.DECIMAL128:
		d := a.(*array.Decimal128)
		v, _ = exactFloat().SetString(d.Value(i).ToString(decimalScale(d.DataType())))
	}
	if v != nil && !fitsColumn(v, to) {
		return outOfRange(column, row)
	}
	return nil
}

func outOfRange(column string, row int64) error {
	return errs.Invalidf("Out of range value for column '%s' at row %d", column, row)
}

// exactFloat is a big.Float precise enough for any 38-digit decimal and for int64's bounds.
func exactFloat() *big.Float { return new(big.Float).SetPrec(256) }

// Bounds of the stored types: the values that round to just outside them.
var (
	int64Below, _ = exactFloat().SetString("-9223372036854775808.5")
	int64Above, _ = exactFloat().SetString("9223372036854775807.5")
	float64Max    = exactFloat().SetFloat64(math.MaxFloat64)
)

// fitsColumn reports whether v, rounded as the column's type rounds, is inside its range.
func fitsColumn(v *big.Float, to arrow.DataType) bool {
	switch t := to.(type) {
	case *arrow.Int64Type:
		return v.Cmp(int64Below) > 0 && v.Cmp(int64Above) < 0
	case *arrow.Float64Type:
		return exactFloat().Abs(v).Cmp(float64Max) <= 0
	case *arrow.Decimal128Type:
		// |v| must round, at scale s, below 10^(p-s): |v| < 10^(p-s) - 0.5 * 10^-s.
		limit := exactFloat().SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision)), nil))
		limit.Sub(limit, big.NewFloat(0.5))
		limit.Quo(limit, exactFloat().SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil)))
		return exactFloat().Abs(v).Cmp(limit) < 0
	}
	return true
}

// valueText is row i of a as text, for error messages.
func valueText(a arrow.Array, i int) string {
	if s, ok := a.(*array.String); ok {
		return s.Value(i)
	}
	return a.ValueStr(i)
}
