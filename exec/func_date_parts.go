package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/errs"
)

// Functions that take a date or time apart: YEAR, QUARTER, MONTH, DAY/DAYOFMONTH, DAYOFWEEK,
// DAYOFYEAR, WEEKDAY, WEEK, YEARWEEK, HOUR, MINUTE, SECOND, MICROSECOND, TO_DAYS, and
// EXTRACT(unit FROM …) as extract_<unit>. Arguments are read as MySQL converts them (dates,
// date-times, text, numbers); a value that is not a valid date gives NULL.

func init() {
	dateParts := map[string]func(c civil, day int64) int64{
		"year":       func(c civil, _ int64) int64 { return c.year },
		"quarter":    func(c civil, _ int64) int64 { return (c.month + 2) / 3 },
		"month":      func(c civil, _ int64) int64 { return c.month },
		"day":        func(c civil, _ int64) int64 { return c.day },
		"dayofmonth": func(c civil, _ int64) int64 { return c.day },
		"dayofweek":  func(_ civil, day int64) int64 { return weekdayOf(day, true) + 1 },
		"weekday":    func(_ civil, day int64) int64 { return weekdayOf(day, false) },
		"dayofyear": func(c civil, day int64) int64 {
			return day - daysFromCivil(c.year, 1, 1) + 1
		},
		"to_days": func(_ civil, day int64) int64 { return day + toDaysEpoch },
	}
	for name, f := range dateParts {
		RegisterScalar(name, resolveDatePart(name, f))
	}
	timeParts := map[string]func(us int64) int64{
		"hour":        func(us int64) int64 { return abs64(us) / usPerHour },
		"minute":      func(us int64) int64 { return abs64(us) / usPerMinute % 60 },
		"second":      func(us int64) int64 { return abs64(us) / usPerSecond % 60 },
		"microsecond": func(us int64) int64 { return abs64(us) % usPerSecond },
	}
	for name, f := range timeParts {
		RegisterScalar(name, resolveTimePart(name, f))
	}
	RegisterScalar("week", resolveWeek("week", false))
	RegisterScalar("yearweek", resolveWeek("yearweek", true))
	for unit := range intervalUnits {
		RegisterScalar("extract_"+unit, resolveExtract(unit))
	}
}

// toDaysEpoch is TO_DAYS('1970-01-01'): MySQL counts days from year 0.
const toDaysEpoch = 719528

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// weekdayOf is the day of the week of day number day: 0 = Sunday … 6 = Saturday when
// sundayFirst, else 0 = Monday … 6 = Sunday.
func weekdayOf(day int64, sundayFirst bool) int64 {
	if sundayFirst {
		return floorMod(day+4, 7)
	}
	return floorMod(day+3, 7)
}

// resolveDatePart resolves a function of one date argument to the BIGINT f computes from its
// civil date and its day number.
func resolveDatePart(name string, f func(c civil, day int64) int64) ScalarResolver {
	return dateFunc(name, arrow.PrimitiveTypes.Int64, func(us int64, _ bool) (int64, bool) {
		return f(civilOf(us), floorDiv(us, usPerDay)), true
	})
}

func resolveTimePart(name string, f func(us int64) int64) ScalarResolver {
	return oneTemporalArg(name, arrow.PrimitiveTypes.Int64, func(ctx context.Context, tc *TaskContext, arg arrow.Array, n int) (arrow.Array, error) {
		r, release, err := readTime(ctx, tc, arg)
		if err != nil {
			return nil, err
		}
		defer release()
		return buildInts(tc, n, func(i int) (int64, bool) {
			us, ok := r(i)
			return f(us), ok
		})
	})
}

// Week behaviour flags of MySQL's calc_week.
const (
	weekMondayFirst  = 1
	weekYear         = 2
	weekFirstWeekday = 4
)

// weekMode turns WEEK()'s mode argument (0…7) into calc_week flags.
func weekMode(mode int64) int {
	f := int(mode & 7)
	if f&weekMondayFirst == 0 {
		f ^= weekFirstWeekday
	}
	return f
}

// calcWeek is MySQL's calc_week: the week number of day number day under the behaviour flags,
// and the year the week belongs to.
func calcWeek(day int64, behaviour int) (week, year int64) {
	y, m, d := civilFromDays(day)
	daynr := day
	firstDaynr := daysFromCivil(y, 1, 1)
	mondayFirst := behaviour&weekMondayFirst != 0
	wy := behaviour&weekYear != 0
	firstWeekday := behaviour&weekFirstWeekday != 0
	weekday := weekdayOf(firstDaynr, !mondayFirst)
	year = y
	if m == 1 && d <= 7-weekday {
		if !wy && ((firstWeekday && weekday != 0) || (!firstWeekday && weekday >= 4)) {
			return 0, year
		}
		wy = true
		year--
		days := daysInYear(year)
		firstDaynr -= days
		weekday = (weekday + 53*7 - days) % 7
	}
	var days int64
	if (firstWeekday && weekday != 0) || (!firstWeekday && weekday >= 4) {
		days = daynr - (firstDaynr + (7 - weekday))
	} else {
		days = daynr - (firstDaynr - weekday)
	}
	if wy && days >= 52*7 {
		weekday = (weekday + daysInYear(year)) % 7
		if (!firstWeekday && weekday < 4) || (firstWeekday && weekday == 0) {
			return 1, year + 1
		}
	}
	return days/7 + 1, year
}

func daysInYear(y int64) int64 {
	if isLeapYear(y) {
		return 366
	}
	return 365
}

// resolveWeek: WEEK(d[, mode]) (mode 0 by default, as default_week_format is) and
// YEARWEEK(d[, mode]) (year * 100 + week, the week counted within its own year).
func resolveWeek(name string, yearWeek bool) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(name, types, 1, 2); err != nil {
			return nil, nil, err
		}
		if !isDateTimeArg(types[0]) || (len(types) == 2 && !isNumericType(types[1]) && !isNullType(types[1]) && !isStringType(types[1])) {
			return nil, nil, errs.Invalidf("function %s: incorrect argument types", name)
		}
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			r, release, err := readDateTime(ctx, tc, args[0])
			if err != nil {
				return nil, err
			}
			defer release()
			mode := func(int) (int64, bool) { return 0, true }
			if len(args) == 2 {
				m, err := CastArray(ctx, tc, args[1], arrow.PrimitiveTypes.Int64)
				if err != nil {
					return nil, err
				}
				defer m.Release()
				mv := int64Values(m)
				mode = func(i int) (int64, bool) { return mv[i], m.IsValid(i) }
			}
			return buildInts(tc, n, func(i int) (int64, bool) {
				us, _, ok := r(i)
				md, mok := mode(i)
				if !ok || !mok {
					return 0, false
				}
				day := floorDiv(us, usPerDay)
				if yearWeek {
					w, y := calcWeek(day, weekMode(md)|weekYear)
					return y*100 + w, true
				}
				w, _ := calcWeek(day, weekMode(md))
				return w, true
			})
		}
		return k, arrow.PrimitiveTypes.Int64, nil
	}
}

// resolveExtract: EXTRACT(unit FROM x). Units of a day or more read x as a date; the others as
// a TIME (so EXTRACT(HOUR FROM TIME '100:00:00') is 100). A compound unit concatenates its
// fields' digits (EXTRACT(YEAR_MONTH FROM '2020-03-04') = 202003, DAY_MINUTE = ddhhmm).
func resolveExtract(unit string) ScalarResolver {
	name := "extract_" + unit
	fields := intervalUnits[unit]
	dateBased := fields[0] <= fieldDay
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(name, types, 1, 1); err != nil {
			return nil, nil, err
		}
		if !isDateTimeArg(types[0]) {
			return nil, nil, errs.Invalidf("EXTRACT does not apply to values of type %s", types[0])
		}
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			var read func(i int) (int64, bool)
			if dateBased && types[0].ID() != arrow.TIME64 {
				r, release, err := readDateTime(ctx, tc, args[0])
				if err != nil {
					return nil, err
				}
				defer release()
				read = func(i int) (int64, bool) { us, _, ok := r(i); return us, ok }
			} else {
				r, release, err := readTime(ctx, tc, args[0])
				if err != nil {
					return nil, err
				}
				defer release()
				read = r
			}
			isTime := !dateBased || types[0].ID() == arrow.TIME64
			return buildInts(tc, n, func(i int) (int64, bool) {
				us, ok := read(i)
				if !ok {
					return 0, false
				}
				return extractFields(us, isTime, fields), true
			})
		}
		return k, arrow.PrimitiveTypes.Int64, nil
	}
}

// extractFields computes EXTRACT's value of fields from a DATETIME, or from a TIME when isTime
// (whose hours are not limited to a day and whose sign carries to the result).
func extractFields(us int64, isTime bool, fields []intervalField) int64 {
	var c civil
	var day int64
	sign := int64(1)
	if isTime {
		if us < 0 {
			sign, us = -1, -us
		}
		c = civil{hour: us / usPerHour, minute: us / usPerMinute % 60, second: us / usPerSecond % 60, micro: us % usPerSecond}
	} else {
		c = civilOf(us)
		day = floorDiv(us, usPerDay)
	}
	var v int64
	for _, f := range fields {
		switch f {
		case fieldYear:
			v = v*10000 + c.year
		case fieldQuarter:
			v = v*10 + (c.month+2)/3
		case fieldMonth:
			v = v*100 + c.month
		case fieldWeek:
			w, _ := calcWeek(day, weekMode(0))
			v = v*100 + w
		case fieldDay:
			v = v*100 + c.day
		case fieldHour:
			v = v*100 + c.hour
		case fieldMinute:
			v = v*100 + c.minute
		case fieldSecond:
			v = v*100 + c.second
		case fieldMicro:
			v = v*1000000 + c.micro
		}
	}
	return sign * v
}
