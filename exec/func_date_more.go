package exec

import (
	"context"
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/errs"
)

// More of MySQL's date and time functions: WEEKOFYEAR, TO_SECONDS, MAKETIME, ADDTIME, SUBTIME,
// TIMESTAMP(expr[, time]), PERIOD_ADD, PERIOD_DIFF.

func init() {
	RegisterScalar("weekofyear", dateFunc("weekofyear", arrow.PrimitiveTypes.Int64, func(us int64, _ bool) (int64, bool) {
		w, _ := calcWeek(floorDiv(us, usPerDay), weekMode(3))
		return w, true
	}))
	RegisterScalar("to_seconds", dateFunc("to_seconds", arrow.PrimitiveTypes.Int64, func(us int64, _ bool) (int64, bool) {
		return floorDiv(us, usPerSecond) + toDaysEpoch*86400, true
	}))
	RegisterScalar("maketime", resolveMakeTime)
	RegisterScalar("addtime", resolveAddTime("addtime", false))
	RegisterScalar("subtime", resolveAddTime("subtime", true))
	RegisterScalar("timestamp", resolveTimestampFunc)
	RegisterScalar("period_add", intFunc("period_add", 2, arrow.PrimitiveTypes.Int64, func(v []int64) (int64, bool) {
		if v[0] == 0 {
			return 0, true
		}
		m := periodMonths(v[0]) + v[1]
		return m/12*100 + m%12 + 1, true
	}))
	RegisterScalar("period_diff", intFunc("period_diff", 2, arrow.PrimitiveTypes.Int64, func(v []int64) (int64, bool) {
		return periodMonths(v[0]) - periodMonths(v[1]), true
	}))
}

// periodMonths is a period YYMM or YYYYMM as a count of months since year 0.
func periodMonths(p int64) int64 {
	if p == 0 {
		return 0
	}
	y := p / 100
	if y < 100 {
		y = twoDigitYear(y)
	}
	return y*12 + p%100 - 1
}

// MAKETIME(hour, minute, second): NULL unless minute and second are in 0…59; the hour clamps
// to ±838.
func resolveMakeTime(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("maketime", types, 3, 3); err != nil {
		return nil, nil, err
	}
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		hm, err := castArgs(ctx, tc, args[:2], []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64})
		if err != nil {
			return nil, err
		}
		defer releaseArrays(hm)
		sec, err := CastArray(ctx, tc, args[2], arrow.PrimitiveTypes.Float64)
		if err != nil {
			return nil, err
		}
		defer sec.Release()
		h, m, s := int64Values(hm[0]), int64Values(hm[1]), float64Values(sec)
		return buildTimes(tc, n, func(i int) (int64, bool) {
			if !allValid(hm, i) || sec.IsNull(i) || m[i] < 0 || m[i] > 59 || s[i] < 0 || s[i] >= 60 {
				return 0, false
			}
			hour := h[i]
			neg := hour < 0
			if neg {
				hour = -hour
			}
			v := min(hour, 839)*usPerHour + m[i]*usPerMinute + int64(math.Round(s[i]*1e6))
			v = min(v, maxTimeUs-999_999)
			if neg {
				v = -v
			}
			return v, true
		})
	}
	return k, timeType, nil
}

// ADDTIME(x, t) / SUBTIME(x, t): a DATETIME or TIME x moved by the TIME t. The result has x's
// type; text x gives text, a date-time when it reads as one, else a time.
func resolveAddTime(name string, sub bool) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(name, types, 2, 2); err != nil {
			return nil, nil, err
		}
		if !isDateTimeArg(types[0]) || !isDateTimeArg(types[1]) {
			return nil, nil, errs.Invalidf("function %s does not apply to values of type %s and %s", name, types[0], types[1])
		}
		out := arrow.DataType(arrow.BinaryTypes.String)
		switch types[0].ID() {
		case arrow.DATE32, arrow.TIMESTAMP:
			out = dateTimeType
		case arrow.TIME64:
			out = timeType
		}
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			x, relX, err := readDateTimeOrTime(ctx, tc, args[0])
			if err != nil {
				return nil, err
			}
			defer relX()
			d, relD, err := readTime(ctx, tc, args[1])
			if err != nil {
				return nil, err
			}
			defer relD()
			row := func(i int) (int64, bool, bool) {
				v, isTime, ok := x(i)
				dv, dok := d(i)
				if !ok || !dok {
					return 0, false, false
				}
				if sub {
					dv = -dv
				}
				if isTime {
					r := v + dv
					return r, true, r >= -maxTimeUs && r <= maxTimeUs
				}
				r, ok := addInterval(v, interval{us: dv})
				return r, false, ok
			}
			switch out.ID() {
			case arrow.TIMESTAMP, arrow.TIME64:
				return buildAs(tc, out, n, func(i int) (int64, bool) {
					v, _, ok := row(i)
					return v, ok
				})
			}
			return buildStrings(tc, n, func(i int) (string, bool) {
				v, isTime, ok := row(i)
				switch {
				case !ok:
					return "", false
				case isTime:
					return formatTime(v), true
				}
				return formatDateTime(v), true
			})
		}
		return k, out, nil
	}
}

// TIMESTAMP(x) is x as a DATETIME; TIMESTAMP(x, t) adds the TIME t to it.
func resolveTimestampFunc(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("timestamp", types, 1, 2); err != nil {
		return nil, nil, err
	}
	for _, t := range types {
		if !isDateTimeArg(t) {
			return nil, nil, errs.Invalidf("function timestamp does not apply to values of type %s", t)
		}
	}
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		x, relX, err := readDateTime(ctx, tc, args[0])
		if err != nil {
			return nil, err
		}
		defer relX()
		add := func(int) (int64, bool) { return 0, true }
		if len(args) == 2 {
			d, relD, err := readTime(ctx, tc, args[1])
			if err != nil {
				return nil, err
			}
			defer relD()
			add = d
		}
		return buildDateTimes(tc, n, func(i int) (int64, bool) {
			v, _, ok := x(i)
			dv, dok := add(i)
			if !ok || !dok {
				return 0, false
			}
			return addInterval(v, interval{us: dv})
		})
	}
	return k, dateTimeType, nil
}
