package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// DATE_FORMAT, STR_TO_DATE, MONTHNAME and DAYNAME with MySQL's format specifiers (English
// names, lc_time_names = en_US).

var (
	monthNames = []string{"January", "February", "March", "April", "May", "June", "July",
		"August", "September", "October", "November", "December"}
	// dayNames are indexed by weekdayOf(day, false): Monday first.
	dayNames = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
)

func init() {
	RegisterScalar("date_format", resolveDateFormat)
	RegisterScalar("monthname", resolveNameOf("monthname", func(c civil, _ int64) string { return monthNames[c.month-1] }))
	RegisterScalar("dayname", resolveNameOf("dayname", func(_ civil, day int64) string { return dayNames[weekdayOf(day, false)] }))
	for _, kind := range []string{"date", "datetime", "time"} {
		RegisterScalar("str_to_date_"+kind, resolveStrToDate(kind))
	}
}

func resolveNameOf(name string, f func(c civil, day int64) string) ScalarResolver {
	return oneTemporalArg(name, arrow.BinaryTypes.String, func(ctx context.Context, tc *TaskContext, arg arrow.Array, n int) (arrow.Array, error) {
		r, release, err := readDateTime(ctx, tc, arg)
		if err != nil {
			return nil, err
		}
		defer release()
		return buildStrings(tc, n, func(i int) (string, bool) {
			us, _, ok := r(i)
			if !ok {
				return "", false
			}
			return f(civilOf(us), floorDiv(us, usPerDay)), true
		})
	})
}

// DATE_FORMAT(d, format).
func resolveDateFormat(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("date_format", types, 2, 2); err != nil {
		return nil, nil, err
	}
	if !isDateTimeArg(types[0]) || !isDateTimeArg(types[1]) {
		return nil, nil, errs.Invalidf("function date_format does not apply to values of type %s and %s", types[0], types[1])
	}
	k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
		var read func(i int) (int64, bool)
		if types[0].ID() == arrow.TIME64 {
			r, release, err := readTime(ctx, tc, args[0])
			if err != nil {
				return nil, err
			}
			defer release()
			read = r
		} else {
			r, release, err := readDateTime(ctx, tc, args[0])
			if err != nil {
				return nil, err
			}
			defer release()
			read = func(i int) (int64, bool) { us, _, ok := r(i); return us, ok }
		}
		return formatEach(ctx, tc, read, args[1], n)
	}
	return k, arrow.BinaryTypes.String, nil
}

// formatDateMySQL formats a DATETIME with DATE_FORMAT's specifiers.
func formatDateMySQL(us int64, format string) string {
	c := civilOf(us)
	day := floorDiv(us, usPerDay)
	var sb strings.Builder
	hour12 := func() int64 {
		if h := c.hour % 12; h != 0 {
			return h
		}
		return 12
	}
	ampm := func() string {
		if c.hour < 12 {
			return "AM"
		}
		return "PM"
	}
	for i := 0; i < len(format); i++ {
		ch := format[i]
		if ch != '%' || i+1 == len(format) {
			sb.WriteByte(ch)
			continue
		}
		i++
		switch format[i] {
		case 'a':
			sb.WriteString(dayNames[weekdayOf(day, false)][:3])
		case 'b':
			sb.WriteString(monthNames[c.month-1][:3])
		case 'c':
			fmt.Fprintf(&sb, "%d", c.month)
		case 'D':
			fmt.Fprintf(&sb, "%d%s", c.day, ordinalSuffix(c.day))
		case 'd':
			fmt.Fprintf(&sb, "%02d", c.day)
		case 'e':
			fmt.Fprintf(&sb, "%d", c.day)
		case 'f':
			fmt.Fprintf(&sb, "%06d", c.micro)
		case 'H':
			fmt.Fprintf(&sb, "%02d", c.hour)
		case 'h', 'I':
			fmt.Fprintf(&sb, "%02d", hour12())
		case 'i':
			fmt.Fprintf(&sb, "%02d", c.minute)
		case 'j':
			fmt.Fprintf(&sb, "%03d", day-daysFromCivil(c.year, 1, 1)+1)
		case 'k':
			fmt.Fprintf(&sb, "%d", c.hour)
		case 'l':
			fmt.Fprintf(&sb, "%d", hour12())
		case 'M':
			sb.WriteString(monthNames[c.month-1])
		case 'm':
			fmt.Fprintf(&sb, "%02d", c.month)
		case 'p':
			sb.WriteString(ampm())
		case 'r':
			fmt.Fprintf(&sb, "%02d:%02d:%02d %s", hour12(), c.minute, c.second, ampm())
		case 'S', 's':
			fmt.Fprintf(&sb, "%02d", c.second)
		case 'T':
			fmt.Fprintf(&sb, "%02d:%02d:%02d", c.hour, c.minute, c.second)
		case 'U':
			w, _ := calcWeek(day, weekFirstWeekday)
			fmt.Fprintf(&sb, "%02d", w)
		case 'u':
			w, _ := calcWeek(day, weekMondayFirst)
			fmt.Fprintf(&sb, "%02d", w)
		case 'V':
			w, _ := calcWeek(day, weekYear|weekFirstWeekday)
			fmt.Fprintf(&sb, "%02d", w)
		case 'v':
			w, _ := calcWeek(day, weekYear|weekMondayFirst)
			fmt.Fprintf(&sb, "%02d", w)
		case 'X':
			_, y := calcWeek(day, weekYear|weekFirstWeekday)
			fmt.Fprintf(&sb, "%04d", y)
		case 'x':
			_, y := calcWeek(day, weekYear|weekMondayFirst)
			fmt.Fprintf(&sb, "%04d", y)
		case 'W':
			sb.WriteString(dayNames[weekdayOf(day, false)])
		case 'w':
			fmt.Fprintf(&sb, "%d", weekdayOf(day, true))
		case 'Y':
			fmt.Fprintf(&sb, "%04d", c.year)
		case 'y':
			fmt.Fprintf(&sb, "%02d", c.year%100)
		default:
			sb.WriteByte(format[i])
		}
	}
	return sb.String()
}

// ordinalSuffix is the English suffix of a day of the month: 1st, 2nd, 3rd, 4th, 11th, 21st.
func ordinalSuffix(d int64) string {
	if d%100 >= 11 && d%100 <= 13 {
		return "th"
	}
	switch d % 10 {
	case 1:
		return "st"
	case 2:
		return "nd"
	case 3:
		return "rd"
	}
	return "th"
}

// StrToDateKind is the type STR_TO_DATE returns for a format, as MySQL decides it from the
// specifiers: "date" when it has only date parts, "time" when only time parts, else
// "datetime". The binder calls str_to_date_<kind>.
func StrToDateKind(format string) string {
	hasDate, hasTime := false, false
	for i := 0; i+1 < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		switch format[i] {
		case 'a', 'b', 'c', 'D', 'd', 'e', 'j', 'M', 'm', 'U', 'u', 'V', 'v', 'W', 'w', 'X', 'x', 'Y', 'y':
			hasDate = true
		case 'f', 'H', 'h', 'I', 'i', 'k', 'l', 'p', 'r', 'S', 's', 'T':
			hasTime = true
		}
	}
	switch {
	case hasDate && !hasTime:
		return "date"
	case hasTime && !hasDate:
		return "time"
	}
	return "datetime"
}

// resolveStrToDate: STR_TO_DATE(text, format) read as kind (date, datetime or time); NULL when
// the text does not match the format or names no valid date.
func resolveStrToDate(kind string) ScalarResolver {
	name := "str_to_date"
	out := map[string]arrow.DataType{"date": dateType, "datetime": dateTimeType, "time": timeType}[kind]
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(name, types, 2, 2); err != nil {
			return nil, nil, err
		}
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			cast, err := castAllTo(ctx, tc, args, arrow.BinaryTypes.String)
			if err != nil {
				return nil, err
			}
			defer releaseArrays(cast)
			s, f := cast[0].(*array.String), cast[1].(*array.String)
			return buildAs(tc, out, n, func(i int) (int64, bool) {
				if s.IsNull(i) || f.IsNull(i) {
					return 0, false
				}
				c, ok := parseWithFormat(s.Value(i), f.Value(i))
				if !ok {
					return 0, false
				}
				switch kind {
				case "time":
					return c.hour*usPerHour + c.minute*usPerMinute + c.second*usPerSecond + c.micro, true
				case "date":
					c.hour, c.minute, c.second, c.micro = 0, 0, 0, 0
				}
				if !c.valid() {
					return 0, false
				}
				if kind == "date" {
					return daysFromCivil(c.year, c.month, c.day), true
				}
				return c.dateTimeUs(), true
			})
		}
		return k, out, nil
	}
}

// parseWithFormat reads s by STR_TO_DATE's format specifiers. Text left over after the format
// is ignored (MySQL warns); a mismatch is ok=false.
func parseWithFormat(s, format string) (civil, bool) {
	var c civil
	pm, hasPM, hour12 := false, false, false
	num := func(maxDigits int) (int64, bool) {
		k := 0
		for k < len(s) && k < maxDigits && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k == 0 {
			return 0, false
		}
		v := atoiDigits(s[:k])
		s = s[k:]
		return v, true
	}
	name := func(names []string, abbrev bool) (int64, bool) {
		for i, n := range names {
			if abbrev {
				n = n[:3]
			}
			if len(s) >= len(n) && strings.EqualFold(s[:len(n)], n) {
				s = s[len(n):]
				return int64(i), true
			}
		}
		return 0, false
	}
	for i := 0; i < len(format); i++ {
		ch := format[i]
		if ch == ' ' {
			s = strings.TrimLeft(s, " ")
			continue
		}
		if ch != '%' || i+1 == len(format) {
			if len(s) == 0 || s[0] != ch {
				return c, false
			}
			s = s[1:]
			continue
		}
		i++
		s = strings.TrimLeft(s, " ")
		var ok bool
		var v int64
		switch format[i] {
		case 'Y':
			k := leadingDigits(s)
			if c.year, ok = num(4); ok && k <= 2 {
				c.year = twoDigitYear(c.year)
			}
		case 'y':
			if c.year, ok = num(2); ok {
				c.year = twoDigitYear(c.year)
			}
		case 'm', 'c':
			c.month, ok = num(2)
		case 'd', 'e':
			c.day, ok = num(2)
		case 'D':
			if c.day, ok = num(2); ok && len(s) >= 2 {
				s = s[2:]
			}
		case 'H', 'k':
			c.hour, ok = num(2)
		case 'h', 'I', 'l':
			c.hour, ok = num(2)
			hour12 = true
		case 'i':
			c.minute, ok = num(2)
		case 'S', 's':
			c.second, ok = num(2)
		case 'f':
			k := leadingDigits(s)
			c.micro, ok = fractionMicros(s), k > 0
			s = s[k:]
		case 'p':
			switch {
			case len(s) >= 2 && strings.EqualFold(s[:2], "AM"):
				ok, hasPM = true, true
			case len(s) >= 2 && strings.EqualFold(s[:2], "PM"):
				ok, hasPM, pm = true, true, true
			}
			if ok {
				s = s[2:]
			}
		case 'M':
			if v, ok = name(monthNames, false); ok {
				c.month = v + 1
			}
		case 'b':
			if v, ok = name(monthNames, true); ok {
				c.month = v + 1
			}
		case 'W':
			_, ok = name(dayNames, false)
		case 'a':
			_, ok = name(dayNames, true)
		case 'j':
			if v, ok = num(3); ok {
				c.month, c.day = 1, v
			}
		case 'T':
			var h, m, sec int64
			if h, ok = num(2); ok && strings.HasPrefix(s, ":") {
				s = s[1:]
				if m, ok = num(2); ok && strings.HasPrefix(s, ":") {
					s = s[1:]
					sec, ok = num(2)
				}
			}
			c.hour, c.minute, c.second = h, m, sec
		case 'r':
			var h, m, sec int64
			if h, ok = num(2); ok && strings.HasPrefix(s, ":") {
				s = s[1:]
				if m, ok = num(2); ok && strings.HasPrefix(s, ":") {
					s = s[1:]
					sec, ok = num(2)
				}
			}
			c.hour, c.minute, c.second, hour12 = h, m, sec, true
			s = strings.TrimLeft(s, " ")
			if len(s) >= 2 && (strings.EqualFold(s[:2], "AM") || strings.EqualFold(s[:2], "PM")) {
				hasPM, pm = true, strings.EqualFold(s[:2], "PM")
				s = s[2:]
			}
		case '%':
			ok = strings.HasPrefix(s, "%")
			if ok {
				s = s[1:]
			}
		default:
			ok = len(s) > 0 && s[0] == format[i]
			if ok {
				s = s[1:]
			}
		}
		if !ok {
			return c, false
		}
	}
	if hour12 || hasPM {
		if c.hour < 1 || c.hour > 12 {
			return c, false
		}
		c.hour %= 12
		if pm {
			c.hour += 12
		}
	}
	if c.month == 1 && c.day > 31 {
		// %j: a day of the year.
		day := daysFromCivil(c.year, 1, 1) + c.day - 1
		y, m, d := civilFromDays(day)
		if y != c.year {
			return c, false
		}
		c.month, c.day = m, d
	}
	return c, true
}

// formatEach formats, for each of n rows, the DATETIME value read gives (NULL when it gives
// none) with that row's format from formats, as DATE_FORMAT does.
func formatEach(ctx context.Context, tc *TaskContext, read func(i int) (int64, bool), formats arrow.Array, n int) (arrow.Array, error) {
	f, err := CastArray(ctx, tc, formats, arrow.BinaryTypes.String)
	if err != nil {
		return nil, err
	}
	defer f.Release()
	fs := f.(*array.String)
	return buildStrings(tc, n, func(i int) (string, bool) {
		us, ok := read(i)
		if !ok || fs.IsNull(i) {
			return "", false
		}
		return formatDateMySQL(us, fs.Value(i)), true
	})
}
