package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Shared plumbing of the date and time functions: reading arguments of any type as DATETIME or
// TIME values the way MySQL converts them, and building temporal results.

// dateTimeRow reads row i of an argument as a DATETIME (microseconds since the epoch); hasTime
// says whether the value had a time of day (a DATE or date-only text has not); ok is false for
// NULL and for values that are not valid dates.
type dateTimeRow func(i int) (us int64, hasTime, ok bool)

// timeRow reads row i of an argument as a TIME (signed microseconds).
type timeRow func(i int) (us int64, ok bool)

// isDateTimeArg reports whether a date function accepts an argument of type t: temporal,
// string, numeric or NULL.
func isDateTimeArg(t arrow.DataType) bool {
	return isNullType(t) || isTemporalType(t) || isStringType(t) || isNumericType(t)
}

// readDateTime returns a reader of a as DATETIME values: dates at midnight, timestamps as they
// are, text by parseMySQLDateTime, numbers as YYYYMMDD[hhmmss]. A TIME is not a date (NULL).
// It may cast a; the returned release frees what it made.
func readDateTime(ctx context.Context, tc *TaskContext, a arrow.Array) (dateTimeRow, func(), error) {
	none := func() {}
	switch x := a.(type) {
	case *array.Date32:
		v := x.Date32Values()
		return func(i int) (int64, bool, bool) {
			if x.IsNull(i) {
				return 0, false, false
			}
			return int64(v[i]) * usPerDay, false, validDay(int64(v[i]))
		}, none, nil
	case *array.Timestamp:
		v := x.TimestampValues()
		per := unitsPerSecond(x.DataType().(*arrow.TimestampType).Unit)
		return func(i int) (int64, bool, bool) {
			if x.IsNull(i) {
				return 0, false, false
			}
			us := ticksToMicros(int64(v[i]), per)
			return us, true, validDateTime(us)
		}, none, nil
	case *array.String:
		return func(i int) (int64, bool, bool) {
			if x.IsNull(i) {
				return 0, false, false
			}
			p, ok := parseMySQLDateTime(x.Value(i))
			return p.us, p.hasTime, ok
		}, none, nil
	case *array.Int64:
		v := x.Int64Values()
		return func(i int) (int64, bool, bool) {
			if x.IsNull(i) {
				return 0, false, false
			}
			p, ok := numberDateTime(v[i])
			return p.us, p.hasTime, ok
		}, none, nil
	}
	t := a.DataType()
	if isIntegerType(t) || isBoolType(t) || isFloatType(t) || isDecimalType(t) {
		// Fractional numbers are read by their text (20200101103000.5).
		to := arrow.DataType(arrow.BinaryTypes.String)
		if isIntegerType(t) || isBoolType(t) {
			to = arrow.PrimitiveTypes.Int64
		}
		c, err := CastArray(ctx, tc, a, to)
		if err != nil {
			return nil, nil, err
		}
		r, _, err := readDateTime(ctx, tc, c)
		return r, c.Release, err
	}
	return func(int) (int64, bool, bool) { return 0, false, false }, none, nil
}

// readTime returns a reader of a as TIME values: times as they are, the time of day of a
// DATETIME, midnight for a DATE, text by parseMySQLTime and integers as hhmmss.
func readTime(ctx context.Context, tc *TaskContext, a arrow.Array) (timeRow, func(), error) {
	none := func() {}
	switch x := a.(type) {
	case *array.Time64:
		v := x.Time64Values()
		per := unitsPerSecond(x.DataType().(*arrow.Time64Type).Unit)
		return func(i int) (int64, bool) {
			if x.IsNull(i) {
				return 0, false
			}
			return ticksToMicros(int64(v[i]), per), true
		}, none, nil
	case *array.String:
		return func(i int) (int64, bool) {
			if x.IsNull(i) {
				return 0, false
			}
			return parseMySQLTime(x.Value(i))
		}, none, nil
	case *array.Int64:
		v := x.Int64Values()
		return func(i int) (int64, bool) {
			if x.IsNull(i) {
				return 0, false
			}
			return numberTime(v[i])
		}, none, nil
	case *array.Date32, *array.Timestamp:
		r, release, err := readDateTime(ctx, tc, a)
		return func(i int) (int64, bool) {
			us, _, ok := r(i)
			_, tod := splitDateTime(us)
			return tod, ok
		}, release, err
	}
	t := a.DataType()
	if isNumericType(t) {
		to := arrow.DataType(arrow.BinaryTypes.String)
		if isIntegerType(t) || isBoolType(t) {
			to = arrow.PrimitiveTypes.Int64
		}
		c, err := CastArray(ctx, tc, a, to)
		if err != nil {
			return nil, nil, err
		}
		r, _, err := readTime(ctx, tc, c)
		return r, c.Release, err
	}
	return func(int) (int64, bool) { return 0, false }, none, nil
}

// ticksToMicros converts a count of 1/per seconds to microseconds.
func ticksToMicros(v, per int64) int64 {
	switch {
	case per == usPerSecond:
		return v
	case per < usPerSecond:
		return v * (usPerSecond / per)
	}
	return floorDiv(v, per/usPerSecond)
}

// The engine's temporal result types.
var (
	dateType     = arrow.FixedWidthTypes.Date32
	dateTimeType = &arrow.TimestampType{Unit: arrow.Microsecond}
	timeType     = &arrow.Time64Type{Unit: arrow.Microsecond}
)

// buildDates, buildDateTimes, buildTimes, buildInts and buildStrings build n rows of their type
// from f, which gives each row's value (days for dates, microseconds for date-times and times)
// and whether it is non-NULL.
func buildDates(tc *TaskContext, n int, f func(i int) (int64, bool)) (arrow.Array, error) {
	return buildRows(array.NewDate32Builder(tc.Alloc), n, func(i int) (arrow.Date32, bool, error) {
		v, ok := f(i)
		return arrow.Date32(v), ok, nil
	})
}

func buildDateTimes(tc *TaskContext, n int, f func(i int) (int64, bool)) (arrow.Array, error) {
	return buildRows(array.NewTimestampBuilder(tc.Alloc, dateTimeType), n, func(i int) (arrow.Timestamp, bool, error) {
		v, ok := f(i)
		return arrow.Timestamp(v), ok, nil
	})
}

func buildTimes(tc *TaskContext, n int, f func(i int) (int64, bool)) (arrow.Array, error) {
	return buildRows(array.NewTime64Builder(tc.Alloc, timeType), n, func(i int) (arrow.Time64, bool, error) {
		v, ok := f(i)
		return arrow.Time64(v), ok, nil
	})
}

func buildInts(tc *TaskContext, n int, f func(i int) (int64, bool)) (arrow.Array, error) {
	return buildRows(newInt64Builder(tc.Alloc), n, func(i int) (int64, bool, error) {
		v, ok := f(i)
		return v, ok, nil
	})
}

func buildStrings(tc *TaskContext, n int, f func(i int) (string, bool)) (arrow.Array, error) {
	return buildRows(newStringBuilder(tc.Alloc), n, func(i int) (string, bool, error) {
		v, ok := f(i)
		return v, ok, nil
	})
}

// buildAs builds n rows of t (date32 in days, timestamp[us] or time64[us] in microseconds,
// int64).
func buildAs(tc *TaskContext, t arrow.DataType, n int, f func(i int) (int64, bool)) (arrow.Array, error) {
	switch t.ID() {
	case arrow.DATE32:
		return buildDates(tc, n, f)
	case arrow.TIMESTAMP:
		return buildDateTimes(tc, n, f)
	case arrow.TIME64:
		return buildTimes(tc, n, f)
	}
	return buildInts(tc, n, f)
}
