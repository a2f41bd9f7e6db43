package sql

import "testing"

func TestDropAggregateAll(t *testing.T) {
	cases := []struct{ in, want string }{
		{"SELECT AVG ( ALL col3 ) FROM t", "SELECT AVG (   col3 ) FROM t"},
		{"SELECT count(all x), sum(ALL-y) FROM t", "SELECT count(  x), sum( -y) FROM t"},
		{"SELECT 'avg(all x)' FROM t", ""},
		{"SELECT f(allx) FROM t", ""},
		{"SELECT * FROM t UNION ALL SELECT * FROM u", ""},
	}
	for _, c := range cases {
		got, changed := dropAggregateAll(c.in)
		if c.want == "" {
			if changed {
				t.Errorf("%q: changed to %q, want it left alone", c.in, got)
			}
			continue
		}
		if !changed || got != c.want {
			t.Errorf("%q: got %q (changed %v), want %q", c.in, got, changed, c.want)
		}
	}
}

func TestAggregateAllBinds(t *testing.T) {
	for _, q := range []string{"SELECT AVG ( ALL a ) FROM t1", "SELECT COUNT(ALL a), MAX( ALL b) FROM t1"} {
		if _, err := parse(q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}
