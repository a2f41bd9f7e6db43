package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// Date and time functions that compute new values: DATE, TIME, LAST_DAY, MAKEDATE, FROM_DAYS,
// DATEDIFF, TIMEDIFF, TIMESTAMPDIFF (timestampdiff_<unit>), UNIX_TIMESTAMP(d), FROM_UNIXTIME,
// TIME_TO_SEC, SEC_TO_TIME.

func init() {
	RegisterScalar("date", resolveDateOnly)
	RegisterScalar("time", resolveTimeOnly)
	RegisterScalar("last_day", resolveLastDay)
	RegisterScalar("makedate", resolveMakeDate)
	RegisterScalar("from_days", resolveFromDays)
	RegisterScalar("datediff", resolveDateDiff)
	RegisterScalar("timediff", resolveTimeDiff)
	RegisterScalar("unix_timestamp", resolveUnixTimestamp)
	RegisterScalar("from_unixtime", resolveFromUnixtime)
	RegisterScalar("time_to_sec", resolveTimeToSec)
	RegisterScalar("sec_to_time", resolveSecToTime)
	for _, unit := range []string{"microsecond", "second", "minute", "hour", "day", "week", "month", "quarter", "year"} {
		RegisterScalar("timestampdiff_"+unit, resolveTimestampDiff(unit))
	}
}

// oneTemporalArg resolves a function of one date, time or text argument with result type out,
// computed by kernel from that argument; any other argument type is invalid.
func oneTemporalArg(name string, out arrow.DataType, kernel func(ctx context.Context, tc *TaskContext, arg arrow.Array, n int) (arrow.Array, error)) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(name, types, 1, 1); err != nil {
			return nil, nil, err
		}
		if !isDateTimeArg(types[0]) {
			return nil, nil, errs.Invalidf("function %s does not apply to values of type %s", name, types[0])
		}
		return func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			return kernel(ctx, tc, args[0], n)
		}, out, nil
	}
}

// dateFunc resolves a function of one date argument to a result of type out computed by f
// from the argument's DATETIME value.
func dateFunc(name string, out arrow.DataType, f func(us int64, hasTime bool) (int64, bool)) ScalarResolver {
	return oneTemporalArg(name, out, func(ctx context.Context, tc *TaskContext, arg arrow.Array, n int) (arrow.Array, error) {
		r, release, err := readDateTime(ctx, tc, arg)
		if err != nil {
			return nil, err
		}
		defer release()
		return buildAs(tc, out, n, func(i int) (int64, bool) {
			us, hasTime, ok := r(i)
			if !ok {
				return 0, false
			}
			return f(us, hasTime)
		})
	})
}

// DATE(x): the date part, a DATE.
var resolveDateOnly = dateFunc("date", dateType, func(us int64, _ bool) (int64, bool) {
	return floorDiv(us, usPerDay), true
})

// LAST_DAY(x): the last day of x's month.
var resolveLastDay = dateFunc("last_day", dateType, func(us int64, _ bool) (int64, bool) {
	c := civilOf(us)
	return daysFromCivil(c.year, c.month, daysInMonth(c.year, c.month)), true
})

// UNIX_TIMESTAMP(x): seconds since 1970-01-01 00:00:00 UTC (the fraction dropped); 0 for
// earlier values, as MySQL does.
var resolveUnixTimestamp = dateFunc("unix_timestamp", arrow.PrimitiveTypes.Int64, func(us int64, _ bool) (int64, bool) {
	if us < 0 {
		return 0, true
	}
	return us / usPerSecond, true
})

// TIME(x): the time part of a date-time or time, a TIME.
func resolveTimeOnly(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("time", types, 1, 1); err != nil {
		return nil, nil, err
	}
	if !isDateTimeArg(types[0]) {
		return nil, nil, errs.Invalidf("function time does not apply to values of type %s", types[0])
	}
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		r, release, err := readTime(ctx, tc, args[0])
		if err != nil {
			return nil, err
		}
		defer release()
		return buildTimes(tc, n, r)
	}
	return k, timeType, nil
}

// intFunc resolves a function of integer arguments (cast to BIGINT) to a result of type out.
func intFunc(name string, arity int, out arrow.DataType, f func(v []int64) (int64, bool)) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(name, types, arity, arity); err != nil {
			return nil, nil, err
		}
		for _, t := range types {
			if !isNumericType(t) && !isStringType(t) && !isNullType(t) {
				return nil, nil, errs.Invalidf("function %s does not apply to values of type %s", name, t)
			}
		}
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			cast, err := castAllTo(ctx, tc, args, arrow.PrimitiveTypes.Int64)
			if err != nil {
				return nil, err
			}
			defer releaseArrays(cast)
			v := make([]int64, arity)
			return buildAs(tc, out, n, func(i int) (int64, bool) {
				if !allValid(cast, i) {
					return 0, false
				}
				for j, c := range cast {
					v[j] = int64Values(c)[i]
				}
				return f(v)
			})
		}
		return k, out, nil
	}
}

// MAKEDATE(year, dayofyear): NULL for a day of year below 1; two-digit years as MySQL reads them.
var resolveMakeDate = intFunc("makedate", 2, dateType, func(v []int64) (int64, bool) {
	y, doy := v[0], v[1]
	if doy <= 0 || y < 0 || y > 9999 {
		return 0, false
	}
	if y < 100 {
		y = twoDigitYear(y)
	}
	if doy > 366*10000 {
		return 0, false
	}
	day := daysFromCivil(y, 1, 1) + doy - 1
	return day, validDay(day)
})

// FROM_DAYS(n): the date n days after year 0 (TO_DAYS's inverse).
var resolveFromDays = intFunc("from_days", 1, dateType, func(v []int64) (int64, bool) {
	day := v[0] - toDaysEpoch
	if v[0] > 4_000_000 || v[0] < 366 {
		return 0, false
	}
	return day, validDay(day)
})

// SEC_TO_TIME(n): n seconds as a TIME, clamped to ±838:59:59.
var resolveSecToTime = intFunc("sec_to_time", 1, timeType, func(v []int64) (int64, bool) {
	lim := (maxTimeUs - 999_999) / usPerSecond
	s := max(min(v[0], lim), -lim)
	return s * usPerSecond, true
})

// TIME_TO_SEC(t): a TIME as seconds.
func resolveTimeToSec(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("time_to_sec", types, 1, 1); err != nil {
		return nil, nil, err
	}
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		r, release, err := readTime(ctx, tc, args[0])
		if err != nil {
			return nil, err
		}
		defer release()
		return buildInts(tc, n, func(i int) (int64, bool) {
			us, ok := r(i)
			return us / usPerSecond, ok
		})
	}
	return k, arrow.PrimitiveTypes.Int64, nil
}

// FROM_UNIXTIME(n[, format]): the DATETIME n seconds after 1970-01-01 00:00:00 UTC (NULL for
// negative n), or that value formatted as DATE_FORMAT does.
func resolveFromUnixtime(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("from_unixtime", types, 1, 2); err != nil {
		return nil, nil, err
	}
	if !isNumericType(types[0]) && !isStringType(types[0]) && !isNullType(types[0]) {
		return nil, nil, errs.Invalidf("function from_unixtime does not apply to values of type %s", types[0])
	}
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		secs, err := CastArray(ctx, tc, args[0], arrow.PrimitiveTypes.Float64)
		if err != nil {
			return nil, err
		}
		defer secs.Release()
		sv := float64Values(secs)
		at := func(i int) (int64, bool) {
			if secs.IsNull(i) || sv[i] < 0 || sv[i] > 32536771199.999999 {
				return 0, false
			}
			return int64(sv[i]*1e6 + 0.5), true
		}
		if len(args) == 1 {
			return buildDateTimes(tc, n, at)
		}
		return formatEach(ctx, tc, at, args[1], n)
	}
	if len(types) == 2 {
		return k, arrow.BinaryTypes.String, nil
	}
	return k, dateTimeType, nil
}

// DATEDIFF(a, b): days from b to a, by their date parts.
func resolveDateDiff(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("datediff", types, 2, 2); err != nil {
		return nil, nil, err
	}
	return twoDates("datediff", types, func(a, b int64) (int64, bool) {
		return floorDiv(a, usPerDay) - floorDiv(b, usPerDay), true
	})
}

// twoDates resolves an int64 function of two arguments read as DATETIMEs.
func twoDates(name string, types []arrow.DataType, f func(a, b int64) (int64, bool)) (Kernel, arrow.DataType, error) {
	if !isDateTimeArg(types[0]) || !isDateTimeArg(types[1]) {
		return nil, nil, errs.Invalidf("function %s does not apply to values of type %s and %s", name, types[0], types[1])
	}
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		ra, relA, err := readDateTime(ctx, tc, args[0])
		if err != nil {
			return nil, err
		}
		defer relA()
		rb, relB, err := readDateTime(ctx, tc, args[1])
		if err != nil {
			return nil, err
		}
		defer relB()
		return buildInts(tc, n, func(i int) (int64, bool) {
			a, _, okA := ra(i)
			b, _, okB := rb(i)
			if !okA || !okB {
				return 0, false
			}
			return f(a, b)
		})
	}
	return k, arrow.PrimitiveTypes.Int64, nil
}

// TIMESTAMPDIFF(unit, a, b): b - a in whole units, truncated toward zero. Months, quarters and
// years count calendar months, less one when b's day and time of day have not reached a's.
func resolveTimestampDiff(unit string) ScalarResolver {
	name := "timestampdiff_" + unit
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(name, types, 2, 2); err != nil {
			return nil, nil, err
		}
		return twoDates(name, types, func(a, b int64) (int64, bool) {
			switch unit {
			case "month", "quarter", "year":
				m := monthsBetween(a, b)
				switch unit {
				case "quarter":
					m /= 3
				case "year":
					m /= 12
				}
				return m, true
			}
			per := map[string]int64{"microsecond": 1, "second": usPerSecond, "minute": usPerMinute,
				"hour": usPerHour, "day": usPerDay, "week": 7 * usPerDay}[unit]
			return (b - a) / per, true
		})
	}
}

// monthsBetween is MySQL's whole-month count from a to b (negative when b < a).
func monthsBetween(a, b int64) int64 {
	neg := false
	if b < a {
		a, b, neg = b, a, true
	}
	ca, cb := civilOf(a), civilOf(b)
	m := (cb.year-ca.year)*12 + cb.month - ca.month
	_, todA := splitDateTime(a)
	_, todB := splitDateTime(b)
	if cb.day < ca.day || (cb.day == ca.day && todB < todA) {
		m--
	}
	if neg {
		return -m
	}
	return m
}

// TIMEDIFF(a, b): a - b as a TIME, clamped to ±838:59:59; both must be date-times or both
// times (else NULL).
func resolveTimeDiff(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("timediff", types, 2, 2); err != nil {
		return nil, nil, err
	}
	for _, t := range types {
		if !isDateTimeArg(t) {
			return nil, nil, errs.Invalidf("function timediff does not apply to values of type %s", t)
		}
	}
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		ra, relA, err := readDateTimeOrTime(ctx, tc, args[0])
		if err != nil {
			return nil, err
		}
		defer relA()
		rb, relB, err := readDateTimeOrTime(ctx, tc, args[1])
		if err != nil {
			return nil, err
		}
		defer relB()
		return buildTimes(tc, n, func(i int) (int64, bool) {
			a, aTime, okA := ra(i)
			b, bTime, okB := rb(i)
			if !okA || !okB || aTime != bTime {
				return 0, false
			}
			return clampTime(a - b), true
		})
	}
	return k, timeType, nil
}

// clampTime limits a TIME to ±838:59:59 (keeping the fraction inside the range).
func clampTime(us int64) int64 {
	return max(min(us, maxTimeUs), -maxTimeUs)
}

// readDateTimeOrTime reads a as DATETIMEs or, for TIME values and text that is a time rather
// than a date, TIMEs (isTime true).
func readDateTimeOrTime(ctx context.Context, tc *TaskContext, a arrow.Array) (func(i int) (us int64, isTime, ok bool), func(), error) {
	switch x := a.(type) {
	case *array.Time64:
		r, release, err := readTime(ctx, tc, a)
		return func(i int) (int64, bool, bool) { us, ok := r(i); return us, true, ok }, release, err
	case *array.String:
		return func(i int) (int64, bool, bool) {
			if x.IsNull(i) {
				return 0, false, false
			}
			s := x.Value(i)
			if p, ok := parseMySQLDateTime(s); ok {
				return p.us, false, true
			}
			us, ok := parseMySQLTime(s)
			return us, true, ok
		}, func() {}, nil
	}
	r, release, err := readDateTime(ctx, tc, a)
	return func(i int) (int64, bool, bool) { us, _, ok := r(i); return us, false, ok }, release, err
}
