package sql

import "testing"

func TestMergeThreePartNames(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT * FROM cachedb.public.t", "SELECT * FROM `cachedb.public`.t"},
		{"SELECT x.y FROM `a`.b.`c d` x WHERE s = 'p.q.r'", "SELECT x.y FROM `a.b`.`c d` x WHERE s = 'p.q.r'"},
		{"SELECT a.b FROM t -- c.d.e\n", "SELECT a.b FROM t -- c.d.e\n"},
		{"SELECT @@session.auto_increment_increment", "SELECT @@session.auto_increment_increment"},
		{"SELECT 1.5 + t.c FROM system.public.datasets", "SELECT 1.5 + t.c FROM `system.public`.datasets"},
	} {
		got, _ := mergeThreePartNames(tc.in)
		if got != tc.want {
			t.Errorf("mergeThreePartNames(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
