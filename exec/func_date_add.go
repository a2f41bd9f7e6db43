package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// Date arithmetic: `d + INTERVAL n unit`, `d - INTERVAL n unit`, DATE_ADD, DATE_SUB, ADDDATE,
// SUBDATE and TIMESTAMPADD all bind to date_add_<unit>(d, n) or date_sub_<unit>(d, n), one
// function per unit because the unit decides the result type (MySQL):
//
//   - DATE + a unit of days or more (DAY, WEEK, MONTH, QUARTER, YEAR, YEAR_MONTH) is a DATE;
//     DATE + a unit with a time part is a DATETIME; DATETIME + anything is a DATETIME;
//   - TIME + a unit without months is a TIME (TIME '10:00' + INTERVAL 1 DAY = '34:00:00');
//   - a string (or number) is read as a date or date-time and the result is a string: a date
//     when the text was a date and the unit has no time part, else a date-time;
//   - the result is NULL when the value is not a valid date, the interval is malformed, or the
//     result leaves 0000-01-01 … 9999-12-31.
//
// Units of months add calendar months and clamp the day to the end of the month
// (2024-01-31 + INTERVAL 1 MONTH = 2024-02-29); other units add an exact duration.

func init() {
	for unit := range intervalUnits {
		RegisterScalar("date_add_"+unit, resolveDateAdd(unit, false))
		RegisterScalar("date_sub_"+unit, resolveDateAdd(unit, true))
	}
}

func resolveDateAdd(unit string, sub bool) ScalarResolver {
	name := "date_add_" + unit
	if sub {
		name = "date_sub_" + unit
	}
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(name, types, 2, 2); err != nil {
			return nil, nil, err
		}
		if !isDateTimeArg(types[0]) || !isDateTimeArg(types[1]) || isTemporalType(types[1]) {
			return nil, nil, errs.Invalidf("%s: incorrect arguments %s, %s", name, types[0], types[1])
		}
		hasTime := intervalHasTime(unit)
		months := intervalUnits[unit][0] <= fieldMonth
		var out arrow.DataType
		switch {
		case types[0].ID() == arrow.DATE32 && !hasTime:
			out = dateType
		case types[0].ID() == arrow.DATE32 || types[0].ID() == arrow.TIMESTAMP:
			out = dateTimeType
		case types[0].ID() == arrow.TIME64:
			out = timeType
		case isNullType(types[0]):
			out = dateTimeType
			if !hasTime {
				out = dateType
			}
		default:
			out = arrow.BinaryTypes.String
		}
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			ivs, release, err := readIntervals(ctx, tc, args[1], unit, sub)
			if err != nil {
				return nil, err
			}
			defer release()
			if out.ID() == arrow.TIME64 {
				t, rel, err := readTime(ctx, tc, args[0])
				if err != nil {
					return nil, err
				}
				defer rel()
				return buildTimes(tc, n, func(i int) (int64, bool) {
					v, ok := t(i)
					iv, ivOK := ivs(i)
					if !ok || !ivOK || months {
						return 0, false
					}
					v += iv.us
					return v, v >= -maxTimeUs && v <= maxTimeUs
				})
			}
			d, rel, err := readDateTime(ctx, tc, args[0])
			if err != nil {
				return nil, err
			}
			defer rel()
			row := func(i int) (int64, bool, bool) {
				v, vt, ok := d(i)
				iv, ivOK := ivs(i)
				if !ok || !ivOK {
					return 0, false, false
				}
				r, ok := addInterval(v, iv)
				return r, vt, ok
			}
			switch out.ID() {
			case arrow.DATE32:
				return buildDates(tc, n, func(i int) (int64, bool) {
					v, _, ok := row(i)
					return floorDiv(v, usPerDay), ok
				})
			case arrow.TIMESTAMP:
				return buildDateTimes(tc, n, func(i int) (int64, bool) {
					v, _, ok := row(i)
					return v, ok
				})
			}
			return buildStrings(tc, n, func(i int) (string, bool) {
				v, vt, ok := row(i)
				if !ok {
					return "", false
				}
				if !vt && !hasTime {
					return formatDate(floorDiv(v, usPerDay)), true
				}
				return formatDateTime(v), true
			})
		}
		return k, out, nil
	}
}

// intervalRow reads row i of an interval value.
type intervalRow func(i int) (interval, bool)

// readIntervals reads the interval values of a for unit, negated when neg.
func readIntervals(ctx context.Context, tc *TaskContext, a arrow.Array, unit string, neg bool) (intervalRow, func(), error) {
	none := func() {}
	flip := func(iv interval, ok bool) (interval, bool) {
		if neg {
			iv.months, iv.us = -iv.months, -iv.us
		}
		return iv, ok
	}
	single := len(intervalUnits[unit]) == 1
	switch x := a.(type) {
	case *array.Int64:
		v := x.Int64Values()
		return func(i int) (interval, bool) {
			if x.IsNull(i) {
				return interval{}, false
			}
			return flip(intervalFromInt(unit, v[i]))
		}, none, nil
	case *array.Float64:
		v := x.Float64Values()
		return func(i int) (interval, bool) {
			if x.IsNull(i) {
				return interval{}, false
			}
			return flip(intervalFromFloat(unit, v[i], false))
		}, none, nil
	case *array.String:
		return func(i int) (interval, bool) {
			if x.IsNull(i) {
				return interval{}, false
			}
			return flip(intervalFromText(unit, x.Value(i)))
		}, none, nil
	}
	t := a.DataType()
	switch {
	case isNullType(t):
		return func(int) (interval, bool) { return interval{}, false }, none, nil
	case isIntegerType(t) || isBoolType(t) || (isDecimalType(t) && single && unit != "second"):
		// Single units round a decimal to an integer, as CAST does.
		c, err := CastArray(ctx, tc, a, arrow.PrimitiveTypes.Int64)
		if err != nil {
			return nil, nil, err
		}
		r, _, err := readIntervals(ctx, tc, c, unit, neg)
		return r, c.Release, err
	case isDecimalType(t) || isFloatType(t):
		// SECOND keeps the fraction; compound units read the decimal's text ('1.50').
		c, err := CastArray(ctx, tc, a, arrow.BinaryTypes.String)
		if err != nil {
			return nil, nil, err
		}
		r, _, err := readIntervals(ctx, tc, c, unit, neg)
		return r, c.Release, err
	}
	return nil, nil, errs.Invalidf("an INTERVAL value cannot be of type %s", t)
}
