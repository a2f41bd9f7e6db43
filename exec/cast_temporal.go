package exec

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Conversions between text and DATE / DATETIME / TIME in MySQL's formats (parseMySQLDateTime,
// parseMySQLTime): '2020-01-02', '2020-1-2', '20200102', '2020-01-02 10:00:00[.ffffff]' (a 'T'
// separator is accepted too). Text that is not a valid date or time converts to NULL, as
// MySQL's CAST does. Times are UTC.

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
			p, ok := parseMySQLDateTime(s)
			return arrow.Date32(floorDiv(p.us, usPerDay)), ok
		})
	case *arrow.TimestampType:
		per := unitsPerSecond(to.Unit)
		return convertText(a, array.NewTimestampBuilder(tc.Alloc, to), func(s string) (arrow.Timestamp, bool) {
			p, ok := parseMySQLDateTime(s)
			return arrow.Timestamp(microsToTicks(p.us, per)), ok
		})
	case *arrow.Time64Type:
		per := unitsPerSecond(to.Unit)
		return convertText(a, array.NewTime64Builder(tc.Alloc, to), func(s string) (arrow.Time64, bool) {
			us, ok := parseMySQLTime(s)
			return arrow.Time64(microsToTicks(us, per)), ok
		})
	}
	return nil
}

// microsToTicks converts microseconds to a count of 1/per seconds.
func microsToTicks(us, per int64) int64 {
	if per >= usPerSecond {
		return us * (per / usPerSecond)
	}
	return floorDiv(us, usPerSecond/per)
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
		return func(i int) string { return formatTime(ticksToMicros(int64(v[i]), per)) }, true
	}
	return nil, false
}

// castTemporal performs the conversions between temporal values and numbers that MySQL has and
// arrow's cast lacks: a number read as a date (20200102 → 2020-01-02, 20200102103000 → a
// DATETIME, 103000 → TIME 10:30:00); a DATE, DATETIME or TIME as its number (20200102,
// 20200102103000[.ffffff], 103000); a DATETIME's time of day as a TIME. ok is false for other
// pairs of types.
func castTemporal(ctx context.Context, tc *TaskContext, a arrow.Array, to arrow.DataType) (arrow.Array, bool, error) {
	from := a.DataType()
	n := a.Len()
	switch {
	case isNumericType(from) && isTemporalType(to):
		if to.ID() == arrow.TIME64 {
			r, release, err := readTime(ctx, tc, a)
			if err != nil {
				return nil, true, err
			}
			defer release()
			out, err := buildTimes(tc, n, r)
			return out, true, err
		}
		r, release, err := readDateTime(ctx, tc, a)
		if err != nil {
			return nil, true, err
		}
		defer release()
		out, err := buildAs(tc, to, n, func(i int) (int64, bool) {
			us, _, ok := r(i)
			if to.ID() == arrow.DATE32 {
				return floorDiv(us, usPerDay), ok
			}
			return us, ok
		})
		return out, true, err
	case isTemporalType(from) && isNumericType(to):
		num, err := temporalNumbers(ctx, tc, a)
		if err != nil {
			return nil, true, err
		}
		defer num.Release()
		out, err := CastArray(ctx, tc, num, to)
		return out, true, err
	case (from.ID() == arrow.TIMESTAMP || from.ID() == arrow.DATE32) && to.ID() == arrow.TIME64:
		r, release, err := readTime(ctx, tc, a)
		if err != nil {
			return nil, true, err
		}
		defer release()
		out, err := buildTimes(tc, n, r)
		return out, true, err
	}
	return nil, false, nil
}

// temporalNumbers is a temporal array as MySQL's numbers for it: int64 YYYYMMDD for dates,
// YYYYMMDDhhmmss for date-times and hhmmss for times, or float64 when some value has a
// fraction of a second.
func temporalNumbers(ctx context.Context, tc *TaskContext, a arrow.Array) (arrow.Array, error) {
	n := a.Len()
	whole := make([]int64, n)
	frac := make([]int64, n)
	valid := make([]bool, n)
	anyFrac := false
	if a.DataType().ID() == arrow.TIME64 {
		r, release, err := readTime(ctx, tc, a)
		if err != nil {
			return nil, err
		}
		defer release()
		for i := range n {
			us, ok := r(i)
			neg := us < 0
			if neg {
				us = -us
			}
			w := us/usPerHour*10000 + us/usPerMinute%60*100 + us/usPerSecond%60
			f := us % usPerSecond
			if neg {
				w, f = -w, -f
			}
			whole[i], frac[i], valid[i] = w, f, ok
			anyFrac = anyFrac || f != 0
		}
	} else {
		r, release, err := readDateTime(ctx, tc, a)
		if err != nil {
			return nil, err
		}
		defer release()
		isDate := a.DataType().ID() == arrow.DATE32
		for i := range n {
			us, _, ok := r(i)
			c := civilOf(us)
			w := c.year*10000 + c.month*100 + c.day
			if !isDate {
				w = w*1000000 + c.hour*10000 + c.minute*100 + c.second
			}
			whole[i], frac[i], valid[i] = w, c.micro, ok
			anyFrac = anyFrac || c.micro != 0
		}
	}
	if anyFrac {
		return buildRows(newFloat64Builder(tc.Alloc), n, func(i int) (float64, bool, error) {
			return float64(whole[i]) + float64(frac[i])/1e6, valid[i], nil
		})
	}
	return buildInts(tc, n, func(i int) (int64, bool) { return whole[i], valid[i] })
}
