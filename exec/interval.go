package exec

import (
	"math"
	"strconv"
	"strings"
)

// MySQL's INTERVAL units and the reading of interval values (`INTERVAL expr unit`).

// intervalField is one part of an interval value.
type intervalField int

const (
	fieldYear intervalField = iota
	fieldQuarter
	fieldMonth
	fieldWeek
	fieldDay
	fieldHour
	fieldMinute
	fieldSecond
	fieldMicro
)

// intervalUnits are the INTERVAL units, by lower-case MySQL name, with the fields of their
// value from left to right ('1:30' HOUR_MINUTE is 1 hour 30 minutes).
var intervalUnits = map[string][]intervalField{
	"microsecond":        {fieldMicro},
	"second":             {fieldSecond},
	"minute":             {fieldMinute},
	"hour":               {fieldHour},
	"day":                {fieldDay},
	"week":               {fieldWeek},
	"month":              {fieldMonth},
	"quarter":            {fieldQuarter},
	"year":               {fieldYear},
	"second_microsecond": {fieldSecond, fieldMicro},
	"minute_microsecond": {fieldMinute, fieldSecond, fieldMicro},
	"minute_second":      {fieldMinute, fieldSecond},
	"hour_microsecond":   {fieldHour, fieldMinute, fieldSecond, fieldMicro},
	"hour_second":        {fieldHour, fieldMinute, fieldSecond},
	"hour_minute":        {fieldHour, fieldMinute},
	"day_microsecond":    {fieldDay, fieldHour, fieldMinute, fieldSecond, fieldMicro},
	"day_second":         {fieldDay, fieldHour, fieldMinute, fieldSecond},
	"day_minute":         {fieldDay, fieldHour, fieldMinute},
	"day_hour":           {fieldDay, fieldHour},
	"year_month":         {fieldYear, fieldMonth},
}

// IsIntervalUnit reports whether name (lower case) is an INTERVAL unit.
func IsIntervalUnit(name string) bool {
	_, ok := intervalUnits[name]
	return ok
}

// intervalHasTime reports whether a unit has parts smaller than a day (adding it to a DATE
// makes a DATETIME).
func intervalHasTime(unit string) bool {
	for _, f := range intervalUnits[unit] {
		if f >= fieldHour {
			return true
		}
	}
	return false
}

// interval is a signed amount of calendar months plus microseconds. Units of months (MONTH,
// QUARTER, YEAR, YEAR_MONTH) have only months; the others only microseconds.
type interval struct {
	months int64
	us     int64
}

// maxIntervalMagnitude and maxIntervalUs bound interval parts so that their sums cannot
// overflow int64; anything larger leaves the DATETIME range (about 3.2e17 µs) anyway.
const (
	maxIntervalMagnitude = int64(1) << 40
	maxIntervalUs        = int64(1) << 60
)

// fieldMicros is the length of one unit of a field of a day or less, in microseconds.
var fieldMicros = map[intervalField]int64{
	fieldWeek: 7 * usPerDay, fieldDay: usPerDay, fieldHour: usPerHour, fieldMinute: usPerMinute,
	fieldSecond: usPerSecond, fieldMicro: 1,
}

// intervalFromFields builds an interval of unit from its field values, right-aligned as MySQL
// does when fewer values are given ('1:30' DAY_SECOND is 1 minute 30 seconds). microDigits is
// the number of digits written for the microsecond field (a field of fewer than six digits is
// a fraction: '1.5' SECOND_MICROSECOND is 1.5 seconds); 0 means the value is a count of
// microseconds. ok is false when there are more values than the unit has fields.
func intervalFromFields(unit string, vals []int64, microDigits int, neg bool) (interval, bool) {
	fields := intervalUnits[unit]
	if len(vals) > len(fields) || len(vals) == 0 {
		return interval{}, false
	}
	fields = fields[len(fields)-len(vals):]
	var iv interval
	for i, f := range fields {
		v := vals[i]
		if v > maxIntervalMagnitude || (f >= fieldWeek && v > maxIntervalUs/fieldMicros[f]) {
			return interval{}, false
		}
		switch f {
		case fieldYear:
			iv.months += 12 * v
		case fieldQuarter:
			iv.months += 3 * v
		case fieldMonth:
			iv.months += v
		case fieldWeek:
			iv.us += 7 * v * usPerDay
		case fieldDay:
			iv.us += v * usPerDay
		case fieldHour:
			iv.us += v * usPerHour
		case fieldMinute:
			iv.us += v * usPerMinute
		case fieldSecond:
			iv.us += v * usPerSecond
		case fieldMicro:
			if len(fields) > 1 && microDigits > 0 && microDigits < 6 {
				for d := microDigits; d < 6; d++ {
					v *= 10
				}
			}
			iv.us += v
		}
	}
	if neg {
		iv.months, iv.us = -iv.months, -iv.us
	}
	return iv, true
}

// intervalFromText reads a string interval value: an optional '-', then numbers separated by
// any other characters ('1:30', '1 10:00:00', '1-6'). A SECOND value may have a fraction
// ('1.5' SECOND is 1.5 seconds); another single unit takes the leading integer.
func intervalFromText(unit string, s string) (interval, bool) {
	s = strings.TrimSpace(s)
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	if unit == "second" {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return intervalFromFloat(unit, f, neg)
		}
	}
	var vals []int64
	microDigits := 0
	for len(s) > 0 {
		k := leadingDigits(s)
		if k == 0 {
			s = s[1:]
			continue
		}
		v, err := strconv.ParseInt(s[:k], 10, 64)
		if err != nil {
			return interval{}, false
		}
		vals = append(vals, v)
		microDigits = k
		s = s[k:]
	}
	if len(intervalUnits[unit]) == 1 {
		if len(vals) == 0 {
			vals = []int64{0}
		}
		vals = vals[:1]
	}
	return intervalFromFields(unit, vals, microDigits, neg)
}

// intervalFromInt reads an integer interval value (for a compound unit, the value of its last
// field: INTERVAL 5 HOUR_MINUTE is 5 minutes).
func intervalFromInt(unit string, v int64) (interval, bool) {
	neg := v < 0
	if neg {
		v = -v
	}
	return intervalFromFields(unit, []int64{v}, 0, neg)
}

// intervalFromFloat reads a non-integer number: single units other than SECOND round it to an
// integer (INTERVAL 1.5 DAY is 2 days), SECOND keeps microseconds, compound units read its
// text ('1.5' HOUR_MINUTE is 1 hour 5 minutes).
func intervalFromFloat(unit string, f float64, neg bool) (interval, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return interval{}, false
	}
	if f < 0 {
		neg, f = !neg, -f
	}
	fields := intervalUnits[unit]
	switch {
	case unit == "second":
		us := math.Round(f * float64(usPerSecond))
		if us > float64(maxIntervalMagnitude)*1e6 {
			return interval{}, false
		}
		return intervalFromFields("microsecond", []int64{int64(us)}, 0, neg)
	case len(fields) == 1:
		r := math.Round(f)
		if r > float64(maxIntervalMagnitude) {
			return interval{}, false
		}
		return intervalFromFields(unit, []int64{int64(r)}, 0, neg)
	}
	text := strconv.FormatFloat(f, 'f', -1, 64)
	if neg {
		text = "-" + text
	}
	return intervalFromText(unit, text)
}

// addInterval adds iv to a DATETIME; ok is false when the result leaves the valid range.
func addInterval(us int64, iv interval) (int64, bool) {
	if iv.months != 0 {
		var ok bool
		if us, ok = addMonths(us, iv.months); !ok {
			return 0, false
		}
	}
	if iv.us > 0 && us > math.MaxInt64-iv.us || iv.us < 0 && us < math.MinInt64-iv.us {
		return 0, false
	}
	us += iv.us
	return us, validDateTime(us)
}
