package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/sql"
)

// planningShapes are statements a hostile client may send, by size: each must cost about
// linear work in its size (see TestPlanningWorkGrowsLinearly). Nested subqueries are not among
// them: every level's passes look at the subqueries below it, which is quadratic in the depth,
// and the depth is capped at MySQL's 63 (TestStatementLimits).
var planningShapes = []struct {
	name  string
	n     int
	build func(n int) string
}{
	{"scalar_subqueries", 200, func(n int) string {
		return "SELECT " + joinTerms(n, ", ", func(int) string { return "(SELECT 1)" })
	}},
	{"and_chain", 500, func(n int) string {
		return "SELECT a FROM t WHERE " + joinTerms(n, " AND ", func(i int) string { return fmt.Sprintf("a = %d", i) })
	}},
	{"or_chain", 500, func(n int) string {
		return "SELECT a FROM t WHERE " + joinTerms(n, " OR ", func(i int) string { return fmt.Sprintf("a = %d", i) })
	}},
	{"union_all", 200, func(n int) string {
		return joinTerms(n, " UNION ALL ", func(i int) string { return fmt.Sprintf("SELECT %d", i) })
	}},
	{"in_list", 2000, func(n int) string {
		return "SELECT a FROM t WHERE a IN (" + joinTerms(n, ",", func(i int) string { return fmt.Sprint(i) }) + ")"
	}},
	{"nested_parens", 400, func(n int) string {
		return "SELECT " + strings.Repeat("(", n) + "a" + strings.Repeat(")", n) + " FROM t"
	}},
	{"nested_plus", 200, func(n int) string {
		return "SELECT " + strings.Repeat("(a + ", n) + "1" + strings.Repeat(")", n) + " FROM t"
	}},
	{"case_list", 200, func(n int) string {
		return "SELECT CASE " + joinTerms(n, " ", func(i int) string { return fmt.Sprintf("WHEN a = %d THEN %d", i, i) }) + " END FROM t"
	}},
}

func joinTerms(n int, sep string, term func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = term(i)
	}
	return strings.Join(parts, sep)
}

// allocated returns the bytes and objects allocated while f ran: a measure of its work that,
// unlike time, does not depend on the machine's load.
func allocated(t *testing.T, f func()) (bytes, objects uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, after.Mallocs - before.Mallocs
}

// TestPlanningWorkGrowsLinearly runs each shape through the whole path (parse, bind, optimize,
// physical planning, execution over a one-row table, and distributed planning) at size n and
// 10n, and requires the work — bytes and objects allocated — to grow at most 15 times: about
// linearly. A quadratic pass (re-combining a UNION chain at every level, copying an OR chain at
// every level, formatting every level of a nested expression) grows it about 100 times.
func TestPlanningWorkGrowsLinearly(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE t (a BIGINT)")
	run(t, e, "INSERT INTO t VALUES (1)")
	ctx := context.Background()
	plan := func(text string) {
		res, err := e.Execute(ctx, text, nil)
		if err != nil {
			t.Fatalf("%.60s…: %v", text, err)
		}
		for res.Reader.Next() {
		}
		if err := res.Reader.Err(); err != nil {
			t.Fatal(err)
		}
		res.Reader.Release()
		if _, err := e.Distribute(ctx, text, 2); err != nil {
			t.Fatal(err)
		}
	}
	for _, sh := range planningShapes {
		small, large := sh.build(sh.n), sh.build(10*sh.n)
		plan(small) // warm up: the parser and the function registry allocate once
		b1, o1 := allocated(t, func() { plan(small) })
		b10, o10 := allocated(t, func() { plan(large) })
		rb, ro := float64(b10)/float64(b1), float64(o10)/float64(o1)
		t.Logf("%s: n=%d: %d bytes, %d objects; 10n: %.1fx bytes, %.1fx objects", sh.name, sh.n, b1, o1, rb, ro)
		if rb > 15 || ro > 15 {
			t.Errorf("%s: planning 10n allocates %.1fx the bytes and %.1fx the objects of n; want about 10x", sh.name, rb, ro)
		}
	}
}

// TestStatementLimits: each limit of Config.Limits gives errs.ResourceExhausted, and a statement
// nested 100,000 deep is refused without overflowing the stack.
func TestStatementLimits(t *testing.T) {
	mem := newTestEngine(t)
	run(t, mem, "CREATE TABLE t (a BIGINT)")
	small, err := New(Config{NoDemo: true, Limits: sql.Limits{MaxStatementBytes: 200, MaxPlanSize: 50}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, small, "CREATE TABLE t (a BIGINT)")
	deep := 100_000
	for _, tt := range []struct {
		name string
		e    *Engine
		text string
		want string // in the message
	}{
		{"statement bytes", small, "SELECT a FROM t WHERE a IN (" + joinTerms(80, ",", func(i int) string { return fmt.Sprint(i) }) + ")", "bytes long"},
		{"plan size", small, "SELECT a FROM t WHERE a IN (" + joinTerms(60, ",", func(int) string { return "1" }) + ")", "too large"},
		{"nested parentheses", mem, "SELECT " + strings.Repeat("(", deep) + "1" + strings.Repeat(")", deep), "nested too deeply"},
		{"nested operators", mem, "SELECT " + strings.Repeat("1 + ", deep) + "1", "nested too deeply"},
		{"nested NOT", mem, "SELECT " + strings.Repeat("NOT ", deep) + "1", "nested too deeply"},
		{"nested unary", mem, "SELECT " + strings.Repeat("!", deep) + "1", "nested too deeply"},
		{"nested CASE", mem, "SELECT " + strings.Repeat("CASE WHEN a = 1 THEN 1 ELSE ", deep) + "0" + strings.Repeat(" END", deep) + " FROM t", "nested too deeply"},
		{"nested subqueries", mem, strings.Repeat("SELECT (", deep) + "SELECT 1" + strings.Repeat(")", deep), "nested too deeply"},
		{"64 nested subqueries", mem, strings.Repeat("SELECT (", 64) + "SELECT 1" + strings.Repeat(")", 64), "Too high level of nesting"},
		{"nested derived tables", mem, strings.Repeat("SELECT * FROM (", deep) + "SELECT 1" + strings.Repeat(") AS d", deep), "nested too deeply"},
	} {
		_, err := tt.e.Execute(context.Background(), tt.text, nil)
		if errs.CategoryOf(err) != errs.ResourceExhausted || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want a resource limit (%s)", tt.name, err, tt.want)
		}
	}
	// Views that each read the one before twice expand to 2^i query blocks from a short text:
	// binding one (to create the next) soon passes the plan size limit.
	run(t, small, "CREATE VIEW v0 AS SELECT a FROM t")
	err = nil
	for i := 1; i <= 10 && err == nil; i++ {
		_, err = small.Execute(context.Background(), fmt.Sprintf("CREATE VIEW v%d AS SELECT a FROM v%d UNION ALL SELECT a FROM v%d", i, i-1, i-1), nil)
	}
	if errs.CategoryOf(err) != errs.ResourceExhausted || !strings.Contains(err.Error(), "too large") {
		t.Errorf("views expanding to 2^10 blocks: error %v, want a resource limit (too large)", err)
	}
	// Within the limits, the same shapes plan.
	for _, text := range []string{
		"SELECT " + strings.Repeat("(", 1000) + "1" + strings.Repeat(")", 1000),
		"SELECT " + strings.Repeat("1 + ", 1000) + "1",
		strings.Repeat("SELECT (", 62) + "SELECT 1" + strings.Repeat(")", 62),
		"SELECT a FROM t WHERE " + joinTerms(100_000, " AND ", func(i int) string { return "a <> 1" }),
		joinTerms(10_000, " UNION ALL ", func(i int) string { return fmt.Sprintf("SELECT %d", i) }),
	} {
		if _, err := mem.Execute(context.Background(), text, nil); err != nil {
			t.Errorf("%.40s…: %v", text, err)
		}
	}
}

// TestPlanningStopsWhenTheClientHasGone: binding and optimizing give up with the context's error.
func TestPlanningStopsWhenTheClientHasGone(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE t (a BIGINT)")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, text := range []string{
		"SELECT a FROM t WHERE a IN (" + joinTerms(5000, ",", func(i int) string { return fmt.Sprint(i) }) + ")",
		joinTerms(5000, " UNION ALL ", func(i int) string { return fmt.Sprintf("SELECT %d", i) }),
	} {
		if _, err := e.Execute(ctx, text, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("%.40s…: error %v, want context.Canceled", text, err)
		}
	}
}
