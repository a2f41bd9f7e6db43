package sql

import (
	"context"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

func TestNestingDepthBoundsTheSyntaxTree(t *testing.T) {
	for _, tt := range []struct {
		text string
		want int
	}{
		{"SELECT a FROM t1", 1},
		{"SELECT ((a)) FROM t1", 3},
		{"SELECT a + b * c FROM t1", 3},
		{"SELECT a + 1, b + 1, c + 1 FROM t1", 2},
		{"SELECT a FROM t1 WHERE a = 1 AND b = 2 OR c = 3", 2},
		{"SELECT a FROM t1 WHERE a = 1 && b = 2 || c = 3", 2},
		{"SELECT NOT NOT a FROM t1", 3},
		{"SELECT !!a FROM t1", 3},
		{"SELECT CASE WHEN a = 1 THEN b + 1 ELSE CASE WHEN b > 2 THEN 1 END END FROM t1", 4},
		{"SELECT '((((', `a(((` FROM t1 -- ((((\n", 1},
		{"SELECT /* (((( */ a FROM t1 # ((((", 1},
		{"SELECT 1 UNION ALL SELECT -1 UNION ALL SELECT -1", 3},
		{"SELECT 1 UNION SELECT 1 UNION ALL SELECT 1 UNION DISTINCT SELECT 1 UNION SELECT 1", 4},
		{"SELECT /*! 1 + 1 */ 1", 7}, // vitess reads the SQL in /*! */; its marks count as operators
		{"SELECT (SELECT (SELECT 1))", 3},
	} {
		if got := nestingDepth(tt.text, 1000); got != tt.want {
			t.Errorf("nestingDepth(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
	// It stops counting past the limit.
	if got := nestingDepth(strings.Repeat("(", 1_000_000), 10); got != 11 {
		t.Errorf("nestingDepth past the limit = %d, want 11", got)
	}
}

func TestBindLimits(t *testing.T) {
	ctx := WithLimits(context.Background(), Limits{MaxStatementBytes: 100, MaxNestingDepth: 20, MaxPlanSize: 30})
	for _, tt := range []struct {
		text, want string
	}{
		{"SELECT a FROM t1 WHERE a IN (" + strings.Repeat("1000,", 20) + "1)", "bytes long"},
		{"SELECT " + strings.Repeat("(", 25) + "1" + strings.Repeat(")", 25), "nested too deeply"},
		{"SELECT " + strings.Repeat("1+", 25) + "1", "nested too deeply"},
		{"SELECT a FROM t1 WHERE a IN (" + strings.Repeat("1,", 30) + "1)", "too large"},
	} {
		_, err := Bind(ctx, tt.text, testCatalog(t), nil)
		if errs.CategoryOf(err) != errs.ResourceExhausted || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want a resource limit (%s)", tt.text, err, tt.want)
		}
	}
	// A chain that switches between UNION ALL and UNION cannot be rebalanced: each switch nests.
	mixed := strings.Repeat("SELECT 1 UNION ALL SELECT 1 UNION ", 12) + "SELECT 1"
	if _, err := Bind(WithLimits(context.Background(), Limits{MaxNestingDepth: 20}), mixed, testCatalog(t), nil); errs.CategoryOf(err) != errs.ResourceExhausted {
		t.Errorf("24 switches of UNION kind: error %v, want a resource limit", err)
	}
	// The binder's own count holds where the text's estimate undercounts: 200 AND chains of 63
	// conditions (too short to be rebalanced), each nested, through an OR, in the first
	// (deepest) operand of the next.
	cond := "a = 1"
	for range 200 {
		cond = "(" + cond + " OR b = 1)" + strings.Repeat(" AND a = 1", 62)
	}
	text := "SELECT a FROM t1 WHERE " + cond
	if d := nestingDepth(text, 5000); d > 1000 {
		t.Fatalf("the estimate is %d; the test needs one that undercounts", d)
	}
	if _, err := Bind(context.Background(), text, testCatalog(t), nil); errs.CategoryOf(err) != errs.ResourceExhausted {
		t.Errorf("200 nested AND chains of 63: error %v, want a resource limit", err)
	}
}

// TestLongChainsAreRebalanced: an AND chain of 10,000 conditions binds to a shallow tree; a
// UNION ALL chain of 10,000 SELECTs binds to one Union of them all, in order.
func TestLongChainsAreRebalanced(t *testing.T) {
	terms := make([]string, 10_000)
	for i := range terms {
		terms[i] = "a <> " + strings.Repeat("1", 1+i%5)
	}
	q := bindStatement(t, "SELECT a FROM t1 WHERE "+strings.Join(terms, " AND "), nil).(*planner.Query)
	var cond planner.Expr
	for p := q.Plan; cond == nil; p = p.Children()[0] {
		if f, ok := p.(*planner.Filter); ok {
			cond = f.Cond
		}
	}
	depth := 0
	var walk func(e planner.Expr, d int)
	walk = func(e planner.Expr, d int) {
		depth = max(depth, d)
		if c, ok := e.(*planner.Call); ok && c.Func == "and" {
			walk(c.Args[0], d+1)
			walk(c.Args[1], d+1)
		}
	}
	walk(cond, 1)
	if depth > 20 {
		t.Errorf("an AND chain of %d binds %d deep", len(terms), depth)
	}

	for i := range terms {
		terms[i] = "SELECT " + strings.Repeat("1", 1+i%5)
	}
	q = bindStatement(t, strings.Join(terms, " UNION ALL "), nil).(*planner.Query)
	u, ok := q.Plan.(*planner.Union)
	if !ok || len(u.Inputs) != len(terms) {
		t.Fatalf("UNION ALL of %d binds to %s", len(terms), planner.Format(q.Plan)[:80])
	}
	for i, in := range u.Inputs {
		lit := in.(*planner.Project).Exprs[0].String()
		if want := strings.Repeat("1", 1+i%5); lit != want {
			t.Fatalf("input %d selects %s, want %s", i, lit, want)
		}
	}
}
