package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// newTestEngine returns an engine without the demo table whose allocator is checked for leaks
// when the test ends.
func newTestEngine(t *testing.T) *Engine {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	e, err := New(Config{NoDemo: true, Alloc: mem, Partitions: 3, BatchSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, name := range mustTableNames(t, e) {
			_ = e.Catalog().DropTable(context.Background(), name, true)
		}
	})
	return e
}

func mustTableNames(t *testing.T, e *Engine) []string {
	names, err := e.Catalog().TableNames(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func run(t *testing.T, e *Engine, sql string) *Result {
	t.Helper()
	r, err := e.Execute(context.Background(), sql, nil)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return r
}

// rows runs a query and renders its rows as "v1,v2" strings.
func rows(t *testing.T, e *Engine, sql string) []string {
	t.Helper()
	r := run(t, e, sql)
	if r.Reader == nil {
		t.Fatalf("%s: not a query", sql)
	}
	defer r.Reader.Release()
	var out []string
	for r.Reader.Next() {
		b := r.Reader.RecordBatch()
		for i := 0; i < int(b.NumRows()); i++ {
			vals := make([]string, b.NumCols())
			for c := range vals {
				vals[c] = valueString(b.Column(c), i)
			}
			out = append(out, strings.Join(vals, ","))
		}
	}
	if err := r.Reader.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func valueString(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	if d, ok := a.(*array.Decimal128); ok {
		return d.Value(i).ToString(d.DataType().(*arrow.Decimal128Type).Scale)
	}
	return a.ValueStr(i)
}

func setupT1(t *testing.T, e *Engine) {
	run(t, e, "CREATE TABLE t1(a INTEGER, b INTEGER, c VARCHAR(10))")
	run(t, e, "INSERT INTO t1 VALUES (1, 10, 'x'), (2, 20, 'y'), (3, NULL, 'x'), (4, 40, NULL), (5, 50, 'z')")
	run(t, e, "CREATE TABLE t2(a INTEGER, d INTEGER)")
	run(t, e, "INSERT INTO t2(d, a) VALUES (100, 1), (300, 3), (301, 3), (NULL, NULL)")
}

func TestQueries(t *testing.T) {
	e := newTestEngine(t)
	setupT1(t, e)
	cases := []struct {
		sql  string
		want []string
	}{
		{"SELECT a, b FROM t1 WHERE b > 15 ORDER BY a", []string{"2,20", "4,40", "5,50"}},
		{"SELECT 1 + 1, 7 / 2, 7 DIV 2, 1 / 0", []string{"2,3.5000,3,NULL"}},
		{"SELECT c, count(*), sum(b) FROM t1 GROUP BY c ORDER BY c", []string{"NULL,1,40", "x,2,10", "y,1,20", "z,1,50"}},
		{"SELECT t1.a, d FROM t1 JOIN t2 ON t1.a = t2.a ORDER BY d", []string{"1,100", "3,300", "3,301"}},
		{"SELECT t1.a, d FROM t1 LEFT JOIN t2 ON t1.a = t2.a WHERE t1.a < 3 ORDER BY t1.a", []string{"1,100", "2,NULL"}},
		{"SELECT a FROM t1 WHERE a IN (SELECT a FROM t2) ORDER BY a", []string{"1", "3"}},
		{"SELECT a FROM t1 WHERE a NOT IN (SELECT a FROM t2)", nil},
		{"SELECT a FROM t1 WHERE a NOT IN (SELECT a FROM t2 WHERE a IS NOT NULL) ORDER BY a", []string{"2", "4", "5"}},
		{"SELECT a FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.a = t1.a) ORDER BY a", []string{"1", "3"}},
		{"SELECT a, (SELECT count(*) FROM t2 WHERE t2.a <= t1.a) FROM t1 ORDER BY a", []string{"1,1", "2,1", "3,3", "4,3", "5,3"}},
		{"SELECT a FROM t1 ORDER BY a DESC LIMIT 2 OFFSET 1", []string{"4", "3"}},
		{"SELECT a FROM t1 WHERE c = (SELECT max(c) FROM t1) OR a IN (SELECT a FROM t2 WHERE d > 300) ORDER BY a", []string{"3", "5"}},
		{"SELECT a, (SELECT min(c) FROM t1) FROM t1 WHERE a < 3 ORDER BY a", []string{"1,x", "2,x"}},
		{"SELECT DISTINCT c FROM t1 ORDER BY c", []string{"NULL", "x", "y", "z"}},
		{"SELECT a FROM t1 WHERE a < 2 UNION SELECT a FROM t2 ORDER BY 1", []string{"NULL", "1", "3"}},
		{"SELECT avg(b), min(c), max(a) FROM t1", []string{"30.0000,x,5"}},
		{"SELECT count(*) FROM t1 WHERE a > 100", []string{"0"}},
		{"SELECT a > 2, CASE WHEN b IS NULL THEN 'none' ELSE 'some' END FROM t1 ORDER BY a", []string{"0,some", "0,some", "1,none", "1,some", "1,some"}},
	}
	mem := e.cfg.Alloc.(*memory.CheckedAllocator)
	for _, c := range cases {
		t.Run(c.sql, func(t *testing.T) {
			before := mem.CurrentAlloc()
			got := rows(t, e, c.sql)
			if leaked := mem.CurrentAlloc() - before; leaked != 0 {
				t.Errorf("query leaked %d bytes", leaked)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestCreateTableAsSelectAndDrop(t *testing.T) {
	e := newTestEngine(t)
	setupT1(t, e)
	r := run(t, e, "CREATE TABLE big AS SELECT a, b * 2 AS b2 FROM t1 WHERE b IS NOT NULL")
	if r.RowsAffected != 4 {
		t.Errorf("CTAS affected %d rows, want 4", r.RowsAffected)
	}
	if got := rows(t, e, "SELECT sum(b2) FROM big"); fmt.Sprint(got) != "[240]" {
		t.Errorf("sum over CTAS table = %v", got)
	}
	run(t, e, "DROP TABLE big")
	if _, err := e.Execute(context.Background(), "SELECT * FROM big", nil); errs.CategoryOf(err) != errs.NotFound {
		t.Errorf("query of a dropped table: %v, want a not-found error", err)
	}
}

func TestBadInputIsCategorizedAndHarmless(t *testing.T) {
	e := newTestEngine(t)
	setupT1(t, e)
	cases := []struct {
		sql  string
		want errs.Category
	}{
		{"SELEC a FROM t1", errs.InvalidInput},
		{"SELECT * FROM nope", errs.NotFound},
		{"SELECT nope FROM t1", errs.NotFound},
		{"SELECT nosuchfunc(a) FROM t1", errs.NotFound},
		{"CREATE TABLE t1(a INTEGER)", errs.AlreadyExists},
		{"SELECT (SELECT a FROM t1) FROM t1", errs.InvalidInput},
	}
	for _, c := range cases {
		_, err := e.Execute(context.Background(), c.sql, nil)
		if err == nil {
			// Some errors surface while streaming.
			r := run(t, e, c.sql)
			for r.Reader.Next() {
			}
			err = r.Reader.Err()
			r.Reader.Release()
		}
		if err == nil || errs.CategoryOf(err) != c.want {
			t.Errorf("%s: got %v (%v), want a %v error", c.sql, err, errs.CategoryOf(err), c.want)
		}
	}
	if got := rows(t, e, "SELECT count(*) FROM t1"); fmt.Sprint(got) != "[5]" {
		t.Errorf("table changed after bad statements: %v", got)
	}
}

func TestExplainShowsLogicalAndPhysicalPlans(t *testing.T) {
	e := newTestEngine(t)
	setupT1(t, e)
	text := strings.Join(rows(t, e, "EXPLAIN SELECT c, count(*) FROM t1 WHERE a > 1 GROUP BY c"), "\n")
	for _, want := range []string{"logical_plan", "physical_plan", "Aggregate", "Scan: t1", "HashAggregate"} {
		if !strings.Contains(text, want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, text)
		}
	}
	text = strings.Join(rows(t, e, "EXPLAIN ANALYZE SELECT c, count(*) FROM t1 GROUP BY c"), "\n")
	for _, want := range []string{"analyzed_plan", "rows=", "batches=", "bytes=", "time="} {
		if !strings.Contains(text, want) {
			t.Errorf("EXPLAIN ANALYZE lacks %q:\n%s", want, text)
		}
	}
}
