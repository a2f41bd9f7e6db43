package exec

import (
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// aggCanFormat reports whether aggAppendText can render values of type t.
func aggCanFormat(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT64, arrow.FLOAT64, arrow.DECIMAL128, arrow.STRING, arrow.BOOL, arrow.NULL,
		arrow.DATE32, arrow.TIMESTAMP:
		return true
	}
	return false
}

// aggAppendText appends the text MySQL would show for the non-NULL value at row i of arr:
// integers in decimal, booleans as 1/0, decimals with their scale, floats in shortest form
// (exponent without "+"), dates as YYYY-MM-DD and timestamps as YYYY-MM-DD hh:mm:ss[.ffffff].
func aggAppendText(dst []byte, arr arrow.Array, i int) []byte {
	switch a := arr.(type) {
	case *array.String:
		return append(dst, a.Value(i)...)
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10)
	case *array.Boolean:
		if a.Value(i) {
			return append(dst, '1')
		}
		return append(dst, '0')
	case *array.Float64:
		s := strconv.FormatFloat(a.Value(i), 'g', -1, 64)
		return append(dst, strings.Replace(s, "e+", "e", 1)...)
	case *array.Decimal128:
		return append(dst, a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)...)
	case *array.Date32:
		return a.Value(i).ToTime().AppendFormat(dst, "2006-01-02")
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		t := a.Value(i).ToTime(unit)
		if t.Nanosecond() != 0 {
			return t.AppendFormat(dst, "2006-01-02 15:04:05.000000")
		}
		return t.AppendFormat(dst, time.DateTime)
	}
	return dst
}
