package exec

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Calendar arithmetic for MySQL's DATE, DATETIME and TIME values, on the proleptic Gregorian
// calendar, in UTC (the engine's session time zone).
//
// A DATE is a day number (days since 1970-01-01, arrow date32); a DATETIME is microseconds since
// 1970-01-01 00:00:00 (arrow timestamp[us]); a TIME is a signed number of microseconds
// (arrow time64[us]), within MySQL's range -838:59:59.999999 … 838:59:59.999999, so it may be
// negative or longer than a day. Valid DATE and DATETIME values lie in 0000-01-01 …
// 9999-12-31 23:59:59.999999; a computation that leaves that range is NULL, as in MySQL.

const (
	usPerSecond = int64(1_000_000)
	usPerMinute = 60 * usPerSecond
	usPerHour   = 60 * usPerMinute
	usPerDay    = 24 * usPerHour
	// maxTimeUs is 838:59:59.999999, the largest TIME magnitude.
	maxTimeUs = 838*usPerHour + 59*usPerMinute + 59*usPerSecond + 999_999
)

// minDay and maxDay bound the valid day numbers: 0000-01-01 and 9999-12-31.
var (
	minDay = daysFromCivil(0, 1, 1)
	maxDay = daysFromCivil(9999, 12, 31)
)

// daysFromCivil is the day number of y-m-d (m 1…12, d 1…31), counted from 1970-01-01.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

func isLeapYear(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

// daysInMonth is the length of month m (1…12) of year y.
func daysInMonth(y, m int64) int64 {
	switch m {
	case 2:
		if isLeapYear(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// validDay reports whether day number z is within 0000-01-01 … 9999-12-31.
func validDay(z int64) bool { return z >= minDay && z <= maxDay }

// validDateTime reports whether us (a DATETIME) is within the valid range.
func validDateTime(us int64) bool { return validDay(floorDiv(us, usPerDay)) }

// splitDateTime splits a DATETIME into its day number and the microseconds into that day.
func splitDateTime(us int64) (day, tod int64) {
	day = floorDiv(us, usPerDay)
	return day, us - day*usPerDay
}

// civil is a broken-down DATETIME.
type civil struct {
	year, month, day, hour, minute, second, micro int64
}

func civilOf(us int64) civil {
	day, tod := splitDateTime(us)
	y, m, d := civilFromDays(day)
	return civil{y, m, d, tod / usPerHour, tod / usPerMinute % 60, tod / usPerSecond % 60, tod % usPerSecond}
}

// valid reports whether c names a real date and time of day (no zero month or day).
func (c civil) valid() bool {
	return c.year >= 0 && c.year <= 9999 && c.month >= 1 && c.month <= 12 && c.day >= 1 &&
		c.day <= daysInMonth(c.year, c.month) && c.hour >= 0 && c.hour < 24 && c.minute >= 0 &&
		c.minute < 60 && c.second >= 0 && c.second < 60 && c.micro >= 0 && c.micro < usPerSecond
}

// dateTimeUs is the DATETIME c names (c must be valid).
func (c civil) dateTimeUs() int64 {
	return daysFromCivil(c.year, c.month, c.day)*usPerDay + c.hour*usPerHour + c.minute*usPerMinute +
		c.second*usPerSecond + c.micro
}

// addMonths moves a DATETIME by n months, keeping the time of day and clamping the day to the
// end of the target month (2024-01-31 + 1 month = 2024-02-29); ok is false outside the range.
func addMonths(us, n int64) (int64, bool) {
	day, tod := splitDateTime(us)
	y, m, d := civilFromDays(day)
	total := y*12 + (m - 1) + n
	if total < 0 || total > 9999*12+11 {
		return 0, false
	}
	y, m = total/12, total%12+1
	d = min(d, daysInMonth(y, m))
	return daysFromCivil(y, m, d)*usPerDay + tod, true
}

// formatDate prints a day number as YYYY-MM-DD.
func formatDate(day int64) string {
	y, m, d := civilFromDays(day)
	return fmt.Sprintf("%04d-%02d-%02d", y, m, d)
}

// formatDateTime prints a DATETIME as YYYY-MM-DD hh:mm:ss, with .ffffff when it has a fraction
// of a second.
func formatDateTime(us int64) string {
	c := civilOf(us)
	s := fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", c.year, c.month, c.day, c.hour, c.minute, c.second)
	if c.micro != 0 {
		s += fmt.Sprintf(".%06d", c.micro)
	}
	return s
}

// formatTime prints a TIME as [-]hh:mm:ss[.ffffff] (hours may exceed 24).
func formatTime(us int64) string {
	sign := ""
	if us < 0 {
		sign, us = "-", -us
	}
	s := fmt.Sprintf("%s%02d:%02d:%02d", sign, us/usPerHour, us/usPerMinute%60, us/usPerSecond%60)
	if us%usPerSecond != 0 {
		s += fmt.Sprintf(".%06d", us%usPerSecond)
	}
	return s
}

// parsedDateTime is text read as a date or date-time: the DATETIME value and whether the text
// had a time part.
type parsedDateTime struct {
	us      int64
	hasTime bool
}

// parseMySQLDateTime reads text as MySQL converts a string to DATE or DATETIME:
//
//   - delimited: 'YYYY-MM-DD[( |T)hh[:mm[:ss[.ffffff]]]]', any punctuation between the parts,
//     parts without zero-padding ('2020-1-2'), two-digit years (70-99 → 19xx, 00-69 → 20xx);
//   - digits only: 'YYYYMMDD', 'YYMMDD', 'YYYYMMDDhhmmss', 'YYMMDDhhmmss', optionally with
//     '.ffffff'.
//
// Leading and trailing spaces are ignored, and so is text after a complete value (MySQL warns
// and uses the value). ok is false for anything else and for dates that do not exist
// ('2021-02-29', '2020-13-01', zero months or days).
func parseMySQLDateTime(s string) (parsedDateTime, bool) {
	s = strings.TrimSpace(s)
	n := leadingDigits(s)
	if n == 0 {
		return parsedDateTime{}, false
	}
	if n > 4 || (n == len(s) && n > 2) {
		return parseCompactDateTime(s[:n], s[n:])
	}
	// Delimited: year, month, day separated by one punctuation character each.
	var f [3]int64
	var digits int
	rest := s
	for i := 0; i < 3; i++ {
		if i > 0 {
			if len(rest) == 0 || !isDateDelimiter(rest[0]) {
				return parsedDateTime{}, false
			}
			rest = rest[1:]
		}
		k := leadingDigits(rest)
		if k == 0 || k > 4 || (i > 0 && k > 2) {
			return parsedDateTime{}, false
		}
		if i == 0 {
			digits = k
		}
		f[i] = atoiDigits(rest[:k])
		rest = rest[k:]
	}
	c := civil{year: f[0], month: f[1], day: f[2]}
	if digits <= 2 {
		c.year = twoDigitYear(c.year)
	}
	hasTime := false
	if len(rest) > 0 && (rest[0] == ' ' || rest[0] == 'T') {
		t := strings.TrimLeft(rest[1:], " ")
		if leadingDigits(t) > 0 {
			var ok bool
			if c.hour, c.minute, c.second, c.micro, ok = parseClock(t); !ok {
				return parsedDateTime{}, false
			}
			hasTime = true
		}
	}
	if !c.valid() {
		return parsedDateTime{}, false
	}
	return parsedDateTime{us: c.dateTimeUs(), hasTime: hasTime}, true
}

// parseCompactDateTime reads an all-digits date or date-time; rest may hold '.ffffff'.
func parseCompactDateTime(d, rest string) (parsedDateTime, bool) {
	var c civil
	hasTime := false
	switch len(d) {
	case 6, 12:
		c.year = twoDigitYear(atoiDigits(d[:2]))
		d = d[2:]
	case 8, 14:
		c.year = atoiDigits(d[:4])
		d = d[4:]
	default:
		return parsedDateTime{}, false
	}
	c.month, c.day = atoiDigits(d[:2]), atoiDigits(d[2:4])
	if len(d) > 4 {
		c.hour, c.minute, c.second = atoiDigits(d[4:6]), atoiDigits(d[6:8]), atoiDigits(d[8:10])
		hasTime = true
		if strings.HasPrefix(rest, ".") {
			c.micro = fractionMicros(rest[1:])
		}
	}
	if !c.valid() {
		return parsedDateTime{}, false
	}
	return parsedDateTime{us: c.dateTimeUs(), hasTime: hasTime}, true
}

// parseClock reads 'hh[:mm[:ss[.ffffff]]]' (any punctuation between the parts).
func parseClock(t string) (h, m, s, us int64, ok bool) {
	var f [3]int64
	for i := 0; i < 3; i++ {
		if i > 0 {
			if len(t) < 2 || !isDateDelimiter(t[0]) || leadingDigits(t[1:]) == 0 {
				break
			}
			t = t[1:]
		}
		k := leadingDigits(t)
		if k == 0 || k > 2 {
			return 0, 0, 0, 0, false
		}
		f[i] = atoiDigits(t[:k])
		t = t[k:]
	}
	if strings.HasPrefix(t, ".") {
		us = fractionMicros(t[1:])
	}
	return f[0], f[1], f[2], us, true
}

// fractionMicros reads the digits of a fraction of a second as microseconds, rounding past the
// sixth digit.
func fractionMicros(s string) int64 {
	k := leadingDigits(s)
	var us int64
	for i := 0; i < 6; i++ {
		us *= 10
		if i < k {
			us += int64(s[i] - '0')
		}
	}
	if k > 6 && s[6] >= '5' && us < usPerSecond-1 {
		us++
	}
	return us
}

// parseMySQLTime reads text as MySQL converts a string to TIME: '[-][D ]hh:mm[:ss[.ffffff]]',
// 'hh:mm', digits 'hhmmss' / 'mmss' / 'ss' (optionally '.ffffff'), or a date-time, whose time
// of day it takes. Values beyond ±838:59:59 clamp to it, as MySQL does.
func parseMySQLTime(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if p, ok := parseMySQLDateTime(s); ok && (p.hasTime || leadingDigits(s) > 6) {
		_, tod := splitDateTime(p.us)
		return tod, true
	}
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	n := leadingDigits(s)
	if n == 0 {
		return 0, false
	}
	var h, m, sec, us int64
	switch {
	case n < len(s) && s[n] == ' ':
		// 'D hh[:mm[:ss]]'
		days := atoiDigits(s[:n])
		var ok bool
		if h, m, sec, us, ok = parseClockLong(strings.TrimLeft(s[n:], " ")); !ok {
			return 0, false
		}
		h += days * 24
	case n < len(s) && s[n] == ':':
		var ok bool
		if h, m, sec, us, ok = parseClockLong(s); !ok {
			return 0, false
		}
	default:
		v := atoiDigits(s[:n])
		h, m, sec = v/10000, v/100%100, v%100
		if strings.HasPrefix(s[n:], ".") {
			us = fractionMicros(s[n+1:])
		}
	}
	if m > 59 || sec > 59 {
		return 0, false
	}
	v := h*usPerHour + m*usPerMinute + sec*usPerSecond + us
	if h > 838 || v > maxTimeUs-999_999 {
		v = maxTimeUs - 999_999
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseClockLong is parseClock with hours of any length ('100:00:00').
func parseClockLong(t string) (h, m, s, us int64, ok bool) {
	k := leadingDigits(t)
	if k == 0 || k > 7 {
		return 0, 0, 0, 0, false
	}
	h = atoiDigits(t[:k])
	t = t[k:]
	if len(t) == 0 || t[0] != ':' {
		return h, 0, 0, 0, true
	}
	_, m, s, us, ok = parseClock("0" + t)
	if !ok {
		return 0, 0, 0, 0, false
	}
	return h, m, s, us, true
}

// isDateDelimiter reports whether c may separate the parts of a date or time.
func isDateDelimiter(c byte) bool {
	return c != ' ' && c != 'T' && (c < '0' || c > '9') && c < 0x80 && c > ' '
}

// leadingDigits counts the ASCII digits s starts with.
func leadingDigits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func atoiDigits(s string) int64 {
	var v int64
	for i := 0; i < len(s); i++ {
		v = v*10 + int64(s[i]-'0')
	}
	return v
}

// twoDigitYear maps a two-digit year as MySQL does: 70-99 → 1970-1999, 00-69 → 2000-2069.
func twoDigitYear(y int64) int64 {
	if y < 70 {
		return 2000 + y
	}
	if y < 100 {
		return 1900 + y
	}
	return y
}

// numberDateTime reads an integer as MySQL reads a number as a date or date-time: YYMMDD,
// YYYYMMDD, YYMMDDhhmmss or YYYYMMDDhhmmss, with leading zeros implied (10101 is 2001-01-01).
func numberDateTime(v int64) (parsedDateTime, bool) {
	if v <= 0 {
		return parsedDateTime{}, false
	}
	d := fmt.Sprint(v)
	switch {
	case len(d) <= 6:
		d = strings.Repeat("0", 6-len(d)) + d
	case len(d) <= 8:
		d = strings.Repeat("0", 8-len(d)) + d
	case len(d) <= 12:
		d = strings.Repeat("0", 12-len(d)) + d
	case len(d) <= 14:
		d = strings.Repeat("0", 14-len(d)) + d
	default:
		return parsedDateTime{}, false
	}
	return parseCompactDateTime(d, "")
}

// numberTime reads an integer hhmmss as a TIME (-838:59:59 … 838:59:59).
func numberTime(v int64) (int64, bool) {
	neg := v < 0
	if neg {
		v = -v
	}
	h, m, s := v/10000, v/100%100, v%100
	if m > 59 || s > 59 || h > 838 {
		return 0, false
	}
	t := h*usPerHour + m*usPerMinute + s*usPerSecond
	if neg {
		t = -t
	}
	return t, true
}

// ParseDateTimeText reads text as MySQL reads a DATE or DATETIME (parseMySQLDateTime): the value
// in microseconds since 1970-01-01 00:00:00 UTC and whether the text had a time part.
func ParseDateTimeText(s string) (us int64, hasTime, ok bool) {
	p, ok := parseMySQLDateTime(s)
	return p.us, p.hasTime, ok
}

// ParseTimeText reads text as MySQL reads a TIME, in signed microseconds.
func ParseTimeText(s string) (int64, bool) { return parseMySQLTime(s) }

// TimeType is the engine's TIME type, time64[us] (signed microseconds, ±838:59:59.999999).
var TimeType arrow.DataType = timeType

// DaysFromCivil is the day number (days since 1970-01-01) of y-m-d.
func DaysFromCivil(y, m, d int64) int64 { return daysFromCivil(y, m, d) }
