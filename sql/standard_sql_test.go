package sql

import (
	"testing"

	"vitess.io/vitess/go/vt/sqlparser"
)

func TestStandardSQLRewrites(t *testing.T) {
	p, err := newParser()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{"select 1 where d <= date '1998-12-01' - interval '90' day (3)", "select 1 where d <= date '1998-12-01' - interval '90' day"},
		{"select date '1998-12-01' - INTERVAL '3' MONTH(2) + interval 1 year", "select date '1998-12-01' - INTERVAL '3' MONTH + interval 1 year"},
		{"select a from t order by a fetch first 10 rows only", "select a from t order by a LIMIT 10"},
		{"select a from t FETCH NEXT ROW ONLY", "select a from t LIMIT 1"},
		{"select a from t order by a offset 5 rows fetch first 3 rows only", "select a from t order by a LIMIT 3 OFFSET 5"},
		{"select a from t order by a offset 5 rows", "select a from t order by a LIMIT 18446744073709551615 OFFSET 5"},
		{"select (select a from t fetch first 1 row only) from u", "select (select a from t LIMIT 1) from u"},
		// Inside strings, quoted names and comments nothing changes.
		{"select 'fetch first 3 rows only', `interval` from t /* day (3) */", ""},
		// What MySQL reads already, and what the rewrite does not know, is left alone.
		{"select a from t limit 3 offset 5", ""},
		{"select a from t fetch first 3 percent rows only", ""},
	} {
		got, ok := standardSQL(p, c.in)
		if c.want == "" {
			if ok {
				t.Errorf("standardSQL(%q) = %q, want it unchanged", c.in, got)
			}
			continue
		}
		if !ok || got != c.want {
			t.Errorf("standardSQL(%q) = %q (%v), want %q", c.in, got, ok, c.want)
		}
	}
}

// TestStandardSpellingsParse: statements in the standard spellings parse, and mean what their
// MySQL spellings mean.
func TestStandardSpellingsParse(t *testing.T) {
	for std, mysql := range map[string]string{
		"select a from t where d <= date '1998-12-01' - interval '90' day (3)": "select a from t where d <= date '1998-12-01' - interval '90' day",
		"select a from t order by a offset 2 rows fetch next 5 rows only":      "select a from t order by a limit 5 offset 2",
	} {
		got, err := parse(std)
		if err != nil {
			t.Fatalf("%s: %v", std, err)
		}
		want, err := parse(mysql)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := sqlparser.String(got), sqlparser.String(want); g != w {
			t.Errorf("%s parses as %s, want %s", std, g, w)
		}
	}
}
