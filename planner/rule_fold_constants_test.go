package planner

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestFoldConstantsEvaluatesLiteralArithmetic(t *testing.T) {
	b := newPlanBuilder(t)
	t1 := b.scan("t1")
	sum := &Call{Func: "+", Args: []Expr{lit(2), &Call{Func: "*", Args: []Expr{lit(3), lit(4)}, T: arrow.PrimitiveTypes.Int64}}, T: arrow.PrimitiveTypes.Int64}
	p := OptimizeWith(&Filter{Input: t1, Cond: cmp(">", col(t1.Columns[0]), sum)}, []Rule{FoldConstants{}})
	assertPlan(t, p, `
Filter: (a#1 > 14)
  Scan: t1 columns=[a#1, b#2, c#3]`)
}

func TestFoldConstantsLeavesFailingCallsForExecution(t *testing.T) {
	overflow := &Call{Func: "+", Args: []Expr{lit(math.MaxInt64), lit(1)}, T: arrow.PrimitiveTypes.Int64}
	if _, changed := foldExpr(overflow); changed {
		t.Fatal("an overflowing constant must raise its error when evaluated, not vanish at planning")
	}
}

func TestFoldConstantsKeepsColumnExpressions(t *testing.T) {
	b := newPlanBuilder(t)
	t1 := b.scan("t1")
	e := &Call{Func: "+", Args: []Expr{col(t1.Columns[0]), lit(1)}, T: arrow.PrimitiveTypes.Int64}
	if _, changed := foldExpr(e); changed {
		t.Fatal("an expression over a column is not constant")
	}
}

// Constants in a node below the root (here the scan's own filters) are folded too: the scan
// filter then holds a plain literal a source can prune with.
func TestFoldConstantsReachesScanFilters(t *testing.T) {
	b := newPlanBuilder(t)
	t1 := b.scan("t1")
	sum := &Call{Func: "+", Args: []Expr{lit(2), lit(3)}, T: arrow.PrimitiveTypes.Int64}
	t1.Filters = []Expr{cmp(">", col(t1.Columns[0]), sum)}
	p := OptimizeWith(&Limit{Input: t1, Count: 1}, []Rule{FoldConstants{}})
	assertPlan(t, p, `
Limit: offset=0 count=1
  Scan: t1 columns=[a#1, b#2, c#3] filters=[(a#1 > 5)]`)
}
