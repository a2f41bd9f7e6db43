package exec

import (
	"testing"
)

func TestCivilDaysRoundTrip(t *testing.T) {
	for day := minDay; day <= maxDay; day += 997 {
		y, m, d := civilFromDays(day)
		if got := daysFromCivil(y, m, d); got != day {
			t.Fatalf("day %d → %d-%d-%d → %d", day, y, m, d, got)
		}
	}
	if d := daysFromCivil(1970, 1, 1); d != 0 {
		t.Errorf("1970-01-01 = %d, want 0", d)
	}
	if d := daysFromCivil(2000, 3, 1) - daysFromCivil(2000, 2, 28); d != 2 {
		t.Errorf("2000 is a leap year: %d days from Feb 28 to Mar 1", d)
	}
	if d := daysFromCivil(1900, 3, 1) - daysFromCivil(1900, 2, 28); d != 1 {
		t.Errorf("1900 is not a leap year: %d days from Feb 28 to Mar 1", d)
	}
}

func TestParseMySQLDateTime(t *testing.T) {
	cases := []struct {
		in   string
		want string // "" = invalid
	}{
		{"2020-01-02", "2020-01-02"},
		{"2020-1-2", "2020-01-02"},
		{"2020/01/02", "2020-01-02"},
		{"20200102", "2020-01-02"},
		{"200102", "2020-01-02"},
		{"991231", "1999-12-31"},
		{"20-1-2", "2020-01-02"},
		{"2020-01-02 10:11:12", "2020-01-02 10:11:12"},
		{"2020-01-02T10:11:12.5", "2020-01-02 10:11:12.500000"},
		{"2020-01-02 10:11", "2020-01-02 10:11:00"},
		{"20200102101112", "2020-01-02 10:11:12"},
		{" 2020-01-02 ", "2020-01-02"},
		{"2024-02-29", "2024-02-29"},
		{"2023-02-29", ""},
		{"2020-13-01", ""},
		{"2020-00-10", ""},
		{"2020-01-02 24:00:00", ""},
		{"2020-01", ""},
		{"hello", ""},
		{"", ""},
	}
	for _, c := range cases {
		p, ok := parseMySQLDateTime(c.in)
		got := ""
		switch {
		case ok && p.hasTime:
			got = formatDateTime(p.us)
		case ok:
			got = formatDate(floorDiv(p.us, usPerDay))
		}
		if got != c.want {
			t.Errorf("parseMySQLDateTime(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseMySQLTime(t *testing.T) {
	cases := []struct {
		in   string
		want string
	}{
		{"10:11:12", "10:11:12"},
		{"10:11", "10:11:00"},
		{"-01:30:00", "-01:30:00"},
		{"100:00:00", "100:00:00"},
		{"1 02:00:00", "26:00:00"},
		{"101112", "10:11:12"},
		{"1112", "00:11:12"},
		{"10:11:12.000123", "10:11:12.000123"},
		{"2020-01-02 10:11:12", "10:11:12"},
		{"900:00:00", "838:59:59"},
		{"10:61:00", ""},
		{"x", ""},
	}
	for _, c := range cases {
		us, ok := parseMySQLTime(c.in)
		got := ""
		if ok {
			got = formatTime(us)
		}
		if got != c.want {
			t.Errorf("parseMySQLTime(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestAddMonthsClampsToMonthEnd(t *testing.T) {
	cases := []struct {
		from   string
		months int64
		want   string
	}{
		{"2024-01-31", 1, "2024-02-29"},
		{"2023-01-31", 1, "2023-02-28"},
		{"2024-03-31", -1, "2024-02-29"},
		{"2024-02-29", 12, "2025-02-28"},
		{"2024-02-29", 48, "2028-02-29"},
		{"2024-05-31", 1, "2024-06-30"},
		{"2024-12-15", 1, "2025-01-15"},
		{"2024-01-15", -13, "2022-12-15"},
		{"9999-12-01", 1, ""},
		{"0000-01-01", -1, ""},
	}
	for _, c := range cases {
		p, ok := parseMySQLDateTime(c.from)
		if !ok {
			t.Fatalf("parse %s", c.from)
		}
		us, ok := addMonths(p.us, c.months)
		got := ""
		if ok {
			got = formatDate(floorDiv(us, usPerDay))
		}
		if got != c.want {
			t.Errorf("%s + %d months = %q, want %q", c.from, c.months, got, c.want)
		}
	}
}

func TestIntervalFromText(t *testing.T) {
	cases := []struct {
		unit, text string
		months, us int64
		ok         bool
	}{
		{"hour_minute", "1:30", 0, usPerHour + 30*usPerMinute, true},
		{"hour_minute", "-1:30", 0, -(usPerHour + 30*usPerMinute), true},
		{"day_second", "1 1:1:1", 0, usPerDay + usPerHour + usPerMinute + usPerSecond, true},
		{"day_second", "1:10", 0, usPerMinute + 10*usPerSecond, true}, // right-aligned
		{"day_hour", "-1 10", 0, -(usPerDay + 10*usPerHour), true},
		{"year_month", "1-6", 18, 0, true},
		{"second_microsecond", "1.5", 0, 1_500_000, true},
		{"second_microsecond", "1.000002", 0, 1_000_002, true},
		{"second_microsecond", "1.999999", 0, 1_999_999, true},
		{"minute_second", "1:2:3", 0, 0, false}, // more values than fields
		{"day", "3", 0, 3 * usPerDay, true},
		{"day", "1:30", 0, usPerDay, true}, // a single unit takes the leading integer
		{"second", "1.5", 0, 1_500_000, true},
		{"week", "2", 0, 14 * usPerDay, true},
		{"quarter", "-1", -3, 0, true},
		{"microsecond", "5", 0, 5, true},
	}
	for _, c := range cases {
		iv, ok := intervalFromText(c.unit, c.text)
		if ok != c.ok || (ok && (iv.months != c.months || iv.us != c.us)) {
			t.Errorf("INTERVAL '%s' %s = %+v %v, want months=%d us=%d %v", c.text, c.unit, iv, ok, c.months, c.us, c.ok)
		}
	}
	// Numbers: single units round (1.5 DAY is 2 days), SECOND keeps the fraction, compound units
	// read the digits ('1.5' HOUR_MINUTE is 1 hour 5 minutes), integers fill the last field.
	if iv, _ := intervalFromFloat("day", 1.5, false); iv.us != 2*usPerDay {
		t.Errorf("INTERVAL 1.5 DAY = %+v", iv)
	}
	if iv, _ := intervalFromFloat("second", -2.25, false); iv.us != -2_250_000 {
		t.Errorf("INTERVAL -2.25 SECOND = %+v", iv)
	}
	if iv, _ := intervalFromFloat("hour_minute", 1.5, false); iv.us != usPerHour+5*usPerMinute {
		t.Errorf("INTERVAL 1.5 HOUR_MINUTE = %+v", iv)
	}
	if iv, _ := intervalFromInt("hour_minute", 5); iv.us != 5*usPerMinute {
		t.Errorf("INTERVAL 5 HOUR_MINUTE = %+v", iv)
	}
}

func TestAddIntervalLeavesRangeAsNotOK(t *testing.T) {
	p, _ := parseMySQLDateTime("9999-12-31 23:59:59")
	if _, ok := addInterval(p.us, interval{us: usPerSecond}); ok {
		t.Error("9999-12-31 23:59:59 + 1 second must leave the range")
	}
	p, _ = parseMySQLDateTime("0000-01-01")
	if _, ok := addInterval(p.us, interval{us: -1}); ok {
		t.Error("0000-01-01 - 1 microsecond must leave the range")
	}
	if _, ok := addInterval(p.us, interval{us: 1 << 62}); ok {
		t.Error("a huge interval must not wrap around")
	}
	for _, unit := range []string{"day", "week", "hour", "minute"} {
		iv, ok := intervalFromInt(unit, 1<<39)
		if ok {
			if _, ok := addInterval(p.us, iv); ok {
				t.Errorf("INTERVAL 2^39 %s must leave the range, not wrap around", unit)
			}
		}
	}
}

// TestWeekModes checks calcWeek against MySQL's documented WEEK / YEARWEEK / %X %V results.
func TestWeekModes(t *testing.T) {
	day := func(s string) int64 {
		p, ok := parseMySQLDateTime(s)
		if !ok {
			t.Fatalf("parse %s", s)
		}
		return floorDiv(p.us, usPerDay)
	}
	cases := []struct {
		date      string
		behaviour int
		week      int64
		year      int64 // 0: not checked
	}{
		{"2008-02-20", weekMode(0), 7, 0},
		{"2008-02-20", weekMode(1), 8, 0},
		{"2008-12-31", weekMode(1), 53, 0},
		{"2000-01-01", weekMode(0), 0, 0},
		{"2000-01-01", weekMode(2), 52, 1999},
		{"1987-01-01", weekMode(0) | weekYear, 52, 1986},      // YEARWEEK('1987-01-01') = 198652
		{"1999-01-01", weekYear | weekFirstWeekday, 52, 1998}, // %X %V = '1998 52'
		{"2024-12-30", weekMode(3), 1, 2025},                  // ISO week 1 of 2025
		{"2021-01-03", weekMode(3), 53, 2020},                 // ISO week 53 of 2020
		{"2024-01-07", weekMode(0), 1, 0},
		{"2021-01-01", weekMode(1), 0, 0}, // a Friday: the first week with 4 days starts Jan 4
		{"2021-01-04", weekMode(1), 1, 0},
		{"2024-01-06", weekMode(0), 0, 0},
		{"2024-01-01", weekMode(5), 1, 0},
		{"2023-01-01", weekMode(5), 0, 0},
		{"2023-01-01", weekMode(7), 52, 2022},
	}
	for _, c := range cases {
		w, y := calcWeek(day(c.date), c.behaviour)
		if w != c.week || (c.year != 0 && y != c.year) {
			t.Errorf("calcWeek(%s, %d) = %d (year %d), want %d (year %d)", c.date, c.behaviour, w, y, c.week, c.year)
		}
	}
}

func TestFormatDateMySQL(t *testing.T) {
	cases := []struct{ dt, format, want string }{
		{"2009-10-04 22:23:00", "%W %M %Y", "Sunday October 2009"},
		{"2007-10-04 22:23:00", "%H:%i:%s", "22:23:00"},
		{"1900-10-04 22:23:00", "%D %y %a %d %m %b %j", "4th 00 Thu 04 10 Oct 277"},
		{"1997-10-04 22:23:00", "%H %k %I %r %T %S %w", "22 22 10 10:23:00 PM 22:23:00 00 6"},
		{"1999-01-01", "%X %V", "1998 52"},
		{"2024-01-02 00:05:09.000120", "%e %c %l %p %f %% %q", "2 1 12 AM 000120 % q"},
		{"2024-03-22", "%D %D", "22nd 22nd"},
	}
	for _, c := range cases {
		p, ok := parseMySQLDateTime(c.dt)
		if !ok {
			t.Fatalf("parse %s", c.dt)
		}
		if got := formatDateMySQL(p.us, c.format); got != c.want {
			t.Errorf("DATE_FORMAT('%s', '%s') = %q, want %q", c.dt, c.format, got, c.want)
		}
	}
}

func TestParseWithFormat(t *testing.T) {
	cases := []struct{ s, format, kind, want string }{
		{"01,5,2013", "%d,%m,%Y", "date", "2013-05-01"},
		{"May 1, 2013", "%M %d,%Y", "date", "2013-05-01"},
		{"a09:30:17", "a%h:%i:%s", "time", "09:30:17"},
		{"a09:30:17", "%h:%i:%s", "time", ""},
		{"09:30:17a", "%h:%i:%s", "time", "09:30:17"},
		{"2024-01-07 1:05:09 PM", "%Y-%m-%d %h:%i:%s %p", "datetime", "2024-01-07 13:05:09"},
		{"12:00:00 AM", "%r", "time", "00:00:00"},
		{"2024 060", "%Y %j", "date", "2024-02-29"},
		{"2023-02-30", "%Y-%m-%d", "date", ""},
	}
	for _, c := range cases {
		if k := StrToDateKind(c.format); k != c.kind {
			t.Errorf("StrToDateKind(%q) = %s, want %s", c.format, k, c.kind)
		}
		civ, ok := parseWithFormat(c.s, c.format)
		got := ""
		if ok {
			switch c.kind {
			case "time":
				got = formatTime(civ.hour*usPerHour + civ.minute*usPerMinute + civ.second*usPerSecond)
			case "date":
				if civ.valid() {
					got = formatDate(daysFromCivil(civ.year, civ.month, civ.day))
				}
			default:
				if civ.valid() {
					got = formatDateTime(civ.dateTimeUs())
				}
			}
		}
		if got != c.want {
			t.Errorf("STR_TO_DATE('%s', '%s') = %q, want %q", c.s, c.format, got, c.want)
		}
	}
}
