package exec

import "testing"

// FuzzDateTimeText feeds arbitrary text to every reader of dates, times, intervals and formats:
// none may panic, and a date that parses must format and parse back to itself.
func FuzzDateTimeText(f *testing.F) {
	for _, s := range []string{"2020-01-02", "2020-1-2 3:4:5.6", "20200102101112.5", "-838:59:59", "1 2:3:4", "%Y-%m-%d %h %p %D %j", "99-12-31T23:59", "12:61"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, ok := parseMySQLDateTime(s); ok {
			back, ok := parseMySQLDateTime(formatDateTime(p.us))
			if !ok || back.us != p.us {
				t.Fatalf("%q → %s does not read back", s, formatDateTime(p.us))
			}
			_ = formatDateMySQL(p.us, s)
		}
		parseMySQLTime(s)
		parseWithFormat(s, s)
		if k := StrToDateKind(s); k != "date" && k != "time" && k != "datetime" {
			t.Fatalf("StrToDateKind(%q) = %q", s, k)
		}
		for unit := range intervalUnits {
			if iv, ok := intervalFromText(unit, s); ok {
				addInterval(0, iv)
			}
		}
	})
}
