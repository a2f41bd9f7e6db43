package planner

import "testing"

// A subquery held by a node below the plan's root is optimized too: its filtered cross join
// becomes a hash-able inner join (it used to stay a cross join, run as a nested loop per
// evaluation: TPC-H Q11's HAVING subquery took seconds at scale factor 0.01).
func TestOptimizeRewritesSubqueriesBelowTheRoot(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2, t3 := b.scan("t1"), b.scan("t2"), b.scan("t2")
	sub := b.project(&Filter{Input: crossJoin(t2, t3), Cond: cmp("=", col(t2.Columns[0]), col(t3.Columns[0]))}, col(t2.Columns[1]))
	filter := &Filter{Input: t1, Cond: cmp(">", col(t1.Columns[0]), &ScalarSubquery{Plan: sub})}
	p := Optimize(b.project(filter, col(t1.Columns[1])))
	var found Plan
	var walk func(Plan)
	walk = func(n Plan) {
		for _, e := range PlanExprs(n) {
			walkExpr(e, func(x Expr) {
				if s, ok := x.(*ScalarSubquery); ok {
					found = s.Plan
				}
			})
		}
		for _, c := range n.Children() {
			walk(c)
		}
	}
	walk(p)
	if found == nil {
		t.Fatalf("no subquery left in\n%s", Format(p))
	}
	assertPlan(t, found, `
Project: b#5 AS b#10
  Join: inner on (a#4 = a#7)
    Scan: t2 columns=[a#4, b#5]
    Scan: t2 columns=[a#7]`)
}
