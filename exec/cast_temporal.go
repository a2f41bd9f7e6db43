package exec

import (
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Conversions between text and DATE / DATETIME in MySQL's formats: 'YYYY-MM-DD' and
// 'YYYY-MM-DD hh:mm:ss[.ffffff]' (a 'T' separator is accepted too). Text that is not a valid
// date or time converts to NULL, as MySQL's CAST does. Times are UTC.

var dateTimeLayouts = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04",
	"2006-01-02",
}

// parseDateTime reads a date or date-time; ok is false when s is neither.
func parseDateTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range dateTimeLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// unitsPerSecond is how many ticks of unit make a second.
func unitsPerSecond(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return 1
	case arrow.Millisecond:
		return 1_000
	case arrow.Nanosecond:
		return 1_000_000_000
	}
	return 1_000_000
}

// castTextToTemporal converts text to date32, timestamp or time64; nil when to is none of them.
func castTextToTemporal(tc *TaskContext, a *array.String, to arrow.DataType) arrow.Array {
	switch to := to.(type) {
	case *arrow.Date32Type:
		return convertText(a, array.NewDate32Builder(tc.Alloc), func(s string) (arrow.Date32, bool) {
			t, ok := parseDateTime(s)
			return arrow.Date32(t.Unix() / 86400), ok
		})
	case *arrow.TimestampType:
		per := unitsPerSecond(to.Unit)
		return convertText(a, array.NewTimestampBuilder(tc.Alloc, to), func(s string) (arrow.Timestamp, bool) {
			t, ok := parseDateTime(s)
			return arrow.Timestamp(t.Unix()*per + int64(t.Nanosecond())*per/1_000_000_000), ok
		})
	case *arrow.Time64Type:
		per := unitsPerSecond(to.Unit)
		return convertText(a, array.NewTime64Builder(tc.Alloc, to), func(s string) (arrow.Time64, bool) {
			d, ok := parseTimeOfDay(s)
			return arrow.Time64(d.Nanoseconds() / (1_000_000_000 / per)), ok
		})
	}
	return nil
}

// valueBuilder is the part of a typed Arrow builder convertText uses.
type valueBuilder[T any] interface {
	Append(T)
	AppendNull()
	Reserve(int)
	NewArray() arrow.Array
	Release()
}

// convertText builds an array from a's rows with parse, which reports false for text that is
// not a valid value; NULL rows and invalid text become NULL. It releases b.
func convertText[T any](a *array.String, b valueBuilder[T], parse func(string) (T, bool)) arrow.Array {
	defer b.Release()
	b.Reserve(a.Len())
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		if v, ok := parse(a.Value(i)); ok {
			b.Append(v)
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray()
}

// timeLayouts are the TIME formats text converts from: 'hh:mm:ss[.ffffff]' and 'hh:mm'.
var timeLayouts = []string{"15:04:05.999999999", "15:04:05", "15:04"}

// parseTimeOfDay reads a time of day as the duration since midnight.
func parseTimeOfDay(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range timeLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute +
				time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond()), true
		}
	}
	return 0, false
}

// formatTemporal prints row i of a date32 or timestamp array as MySQL does; ok is false for
// other types.
func temporalFormatter(a arrow.Array) (func(i int) string, bool) {
	switch x := a.(type) {
	case *array.Date32:
		v := x.Date32Values()
		return func(i int) string {
			return time.Unix(int64(v[i])*86400, 0).UTC().Format("2006-01-02")
		}, true
	case *array.Timestamp:
		v := x.TimestampValues()
		per := unitsPerSecond(x.DataType().(*arrow.TimestampType).Unit)
		return func(i int) string {
			sec, frac := int64(v[i])/per, int64(v[i])%per
			if frac < 0 {
				sec, frac = sec-1, frac+per
			}
			t := time.Unix(sec, frac*1_000_000_000/per).UTC()
			if frac == 0 {
				return t.Format("2006-01-02 15:04:05")
			}
			return t.Format("2006-01-02 15:04:05.000000")
		}, true
	case *array.Time64:
		v := x.Time64Values()
		per := unitsPerSecond(x.DataType().(*arrow.Time64Type).Unit)
		return func(i int) string {
			t := time.Unix(0, int64(v[i])*(1_000_000_000/per)).UTC()
			if int64(v[i])%per == 0 {
				return t.Format("15:04:05")
			}
			return t.Format("15:04:05.000000")
		}, true
	}
	return nil, false
}
