package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg"
	"github.com/cachedb/cachedb/catalog/iceberg/icebergtest"
)

// fuzzTables create the tables FuzzSQLRows queries: r holds the edge values of every type
// (NULLs, negatives and extremes, empty and non-ASCII strings, duplicate rows, decimals, dates),
// u is a second table to join with (duplicate keys, NULL keys). lake.ir is r written as an
// Iceberg table.
var fuzzTables = []string{
	"CREATE TABLE r (id BIGINT, i INT, n BIGINT, d DOUBLE, s VARCHAR(32), m DECIMAL(12,3), dt DATE, b BOOLEAN)",
	`INSERT INTO r VALUES
		(1, 0, -9223372036854775807, -0.0, '', -123456789.123, '1970-01-01', true),
		(2, -2147483648, 9223372036854775807, 1e308, 'x', 0.001, '9999-12-31', false),
		(4, 2147483647, -1, -1.5, 'a b', 999999999.999, '2000-02-29', NULL),
		(4, 2147483647, -1, -1.5, 'a b', 999999999.999, '2000-02-29', NULL),
		(5, 7, 42, 3.25, 'Ünïcödé ✓', -0.5, '1000-01-01', true),
		(6, -7, 0, -1e-308, '%_\\''"', 0, '2024-12-31', false),
		(7, 1, 1, 2.5e10, 'x', -999999999.999, '1999-12-31', true),
		(NULL, 0, 5, 0, ' ', 1.5, '2020-06-15', false)`,
	// A NULL DATE literal is refused by INSERT ("cannot cast NULL of type null to date32"), so
	// the row of NULLs leaves its date out.
	"INSERT INTO r (id, i, n, d, s, m, b) VALUES (3, NULL, NULL, NULL, NULL, NULL, NULL)",
	"CREATE TABLE u (k BIGINT, s VARCHAR(8), m DECIMAL(5,2))",
	"INSERT INTO u VALUES (1, 'x', 1.50), (1, 'x', 1.50), (4, '', -0.01), (NULL, NULL, NULL), (-9223372036854775808, 'Ünï', 999.99), (7, 'a b', 0)",
}

// newFuzzEngine returns an engine holding fuzzTables, with r also in the Iceberg catalog
// "lake" (namespace fz) written under dir.
func newFuzzEngine(tb testing.TB, dir string) *Engine {
	tb.Helper()
	ctx := context.Background()
	setup := func(e *Engine) {
		for _, s := range fuzzTables {
			if _, err := e.Execute(ctx, s, nil); err != nil {
				tb.Fatalf("%s: %v", s, err)
			}
		}
	}
	mem, err := New(Config{NoDemo: true})
	if err != nil {
		tb.Fatal(err)
	}
	setup(mem)
	res, err := mem.Execute(ctx, "SELECT * FROM r", nil)
	if err != nil {
		tb.Fatal(err)
	}
	cfg, err := icebergtest.WriteReader(ctx, dir, "lake", "fz", "ir", res.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	lake, err := iceberg.Open(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := New(Config{NoDemo: true, BatchSize: 3, Sources: []catalog.Catalog{lake}})
	if err != nil {
		tb.Fatal(err)
	}
	setup(e)
	return e
}

// runFuzzStatement runs one statement under a deadline and reads at most a bounded part of its
// result. Errors are the statement's business; a recovered panic reported as an error is not.
func runFuzzStatement(t *testing.T, e *Engine, sql string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := e.Execute(ctx, sql, nil)
	if err == nil && r.Reader != nil {
		for n := 0; n < 1000 && r.Reader.Next(); n++ {
		}
		err = r.Reader.Err()
		r.Reader.Release()
	}
	if err != nil && (strings.Contains(err.Error(), "runtime error") || strings.Contains(err.Error(), "panic")) {
		t.Fatalf("%q: %v", sql, err)
	}
}

// FuzzSQLRows runs arbitrary statements over tables whose rows sit at the edges of their types,
// in memory and in Iceberg. Errors are fine; panics and hangs are not.
func FuzzSQLRows(f *testing.F) {
	seeds := []string{
		"SELECT * FROM r ORDER BY id, s DESC LIMIT 3 OFFSET 1",
		"SELECT s, count(*), sum(n), avg(d), min(m), max(dt), count(DISTINCT i) FROM r GROUP BY s HAVING count(*) >= 1",
		"SELECT DISTINCT i % 3, n DIV 2, -n, abs(n), m * m, m / 0, d / 0, CAST(m AS DOUBLE) FROM r",
		"SELECT r.id, u.s FROM r JOIN u ON r.id = u.k LEFT JOIN u AS v ON v.s = r.s WHERE r.b OR r.b IS NULL",
		"SELECT id FROM r WHERE s LIKE '%\\_%' OR s IN ('', 'x') OR dt BETWEEN '1999-01-01' AND '2001-01-01'",
		"SELECT CONCAT(s, '-', id), UPPER(s), LENGTH(s), REVERSE(s), HEX(s), TRIM(s), REPLACE(s, 'x', 'yy') FROM r",
		"SELECT n + 1, n - 1, n * 2, i * i, -i FROM r",
		"SELECT dt + INTERVAL 1 DAY, YEAR(dt), DATEDIFF(dt, '2000-01-01') FROM r",
		"SELECT CAST(s AS SIGNED), CAST(d AS DECIMAL(38,10)), CAST(n AS CHAR), CAST(dt AS CHAR), CAST(m AS SIGNED) FROM r",
		"SELECT * FROM lake.ir WHERE n > 0 AND s <> '' ORDER BY m",
		"SELECT s, sum(m), count(*) FROM lake.ir GROUP BY s",
		"SELECT a.id, b.k FROM lake.ir a JOIN u b ON a.n = b.k UNION ALL SELECT id, n FROM r",
		"SELECT id FROM r WHERE id IN (SELECT k FROM u) AND NOT EXISTS (SELECT 1 FROM lake.ir x WHERE x.id = r.id + 100)",
		"SELECT (SELECT max(m) FROM u WHERE u.k = r.id), COALESCE(s, 'none'), NULLIF(i, 0), IF(b, 1, 2) FROM r",
		"SELECT id, n FROM r ORDER BY n DESC, id LIMIT 2",
		"SELECT count(*) FROM r, u, lake.ir",
	}
	seeds = append(seeds, hugeSeeds("r", "s", "n")...)
	seeds = append(seeds, hugeSeeds("lake.ir", "s", "m")...)
	for _, s := range seeds {
		f.Add(s)
	}
	e := newFuzzEngine(f, f.TempDir())
	f.Fuzz(func(t *testing.T, sql string) { runFuzzStatement(t, e, sql) })
}
