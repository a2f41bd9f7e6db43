package engine

import (
	"context"
	"testing"
	"time"
)

// FuzzSQL feeds arbitrary statements through the whole engine — parse, bind, optimize, plan,
// execute — over a small table. Errors are fine; panics and hangs are not.
func FuzzSQL(f *testing.F) {
	seeds := []string{
		"SELECT a, b FROM t WHERE a > 1 ORDER BY b DESC LIMIT 2",
		"SELECT c, count(*), sum(a), avg(b) FROM t GROUP BY c HAVING count(*) > 1",
		"SELECT DISTINCT a % 3, CASE WHEN b IS NULL THEN 0 ELSE b END FROM t",
		"SELECT * FROM t AS x, t AS y WHERE x.a = y.b",
		"SELECT a FROM t WHERE a IN (SELECT b FROM t) AND NOT EXISTS (SELECT 1 FROM t AS u WHERE u.a > t.a)",
		"SELECT (SELECT max(b) FROM t AS u WHERE u.a < t.a), CAST(a AS DECIMAL(5,2)) / 3 FROM t",
		"SELECT a FROM t UNION ALL SELECT b FROM t ORDER BY 1",
		"SELECT coalesce(NULL, a), nullif(a, 2), abs(-a), a DIV 0 FROM t LEFT JOIN t AS u ON t.a = u.b",
		"SELECT 9223372036854775807 + 1",
	}
	seeds = append(seeds, hugeSeeds("t", "c", "a")...)
	for _, s := range seeds {
		f.Add(s)
	}
	e, err := New(Config{NoDemo: true, BatchSize: 2})
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	for _, s := range []string{"CREATE TABLE t(a INTEGER, b INTEGER, c VARCHAR(5))", "INSERT INTO t VALUES (1, 2, 'x'), (2, NULL, 'y'), (3, 1, NULL), (NULL, 3, 'x')"} {
		if _, err := e.Execute(ctx, s, nil); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, sql string) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		r, err := e.Execute(ctx, sql, nil)
		if err != nil || r.Reader == nil {
			return
		}
		defer r.Reader.Release()
		for n := 0; r.Reader.Next() && n < 10000; n++ {
		}
	})
}
