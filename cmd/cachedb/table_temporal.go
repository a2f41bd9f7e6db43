package main

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// cellText is the text of row r of col as the MySQL client shows it: DATETIME as
// 'YYYY-MM-DD hh:mm:ss[.ffffff]' and TIME as a signed '[-]hh:mm:ss[.ffffff]' (hours may exceed
// 24); other types as Arrow prints them.
func cellText(col arrow.Array, r int) string {
	switch c := col.(type) {
	case *array.Timestamp:
		t := c.Value(r).ToTime(c.DataType().(*arrow.TimestampType).Unit).UTC()
		if t.Nanosecond() == 0 {
			return t.Format(time.DateTime)
		}
		return t.Format("2006-01-02 15:04:05.000000")
	case *array.Time64:
		d := time.Duration(c.Value(r)) * c.DataType().(*arrow.Time64Type).Unit.Multiplier()
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
	return col.ValueStr(r)
}
