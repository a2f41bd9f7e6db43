package planner

import "testing"

func TestPushFiltersTurnsFilteredCrossJoinIntoInnerJoin(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2 := b.scan("t1"), b.scan("t2")
	cond := and(
		cmp("=", col(t1.Columns[0]), col(t2.Columns[1])),
		cmp(">", col(t1.Columns[2]), lit(5)),
		cmp("<", col(t2.Columns[2]), lit(7)),
	)
	p := OptimizeWith(&Filter{Input: crossJoin(t1, t2), Cond: cond}, []Rule{PushFilters{}})
	assertPlan(t, p, `
Join: inner on (a#1 = b#5)
  Scan: t1 columns=[a#1, b#2, c#3] filters=[(c#3 > 5)]
  Scan: t2 columns=[a#4, b#5, c#6] filters=[(c#6 < 7)]`)
}

func TestPushFiltersThroughProjectionSubstitutesExpressions(t *testing.T) {
	b := newPlanBuilder(t)
	t1 := b.scan("t1")
	sum := &Call{Func: "+", Args: []Expr{col(t1.Columns[0]), col(t1.Columns[1])}, T: t1.Columns[0].Type}
	proj := b.project(t1, sum)
	p := OptimizeWith(&Filter{Input: proj, Cond: cmp(">", col(proj.Columns[0]), lit(10))}, []Rule{PushFilters{}})
	assertPlan(t, p, `
Project: (a#1 + b#2) AS (a#1 + b#2)#4
  Scan: t1 columns=[a#1, b#2, c#3] filters=[((a#1 + b#2) > 10)]`)
}

func TestPushFiltersKeepsRightSideConditionAboveLeftJoin(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2 := b.scan("t1"), b.scan("t2")
	j := &Join{Left: t1, Right: t2, Kind: LeftJoin, On: cmp("=", col(t1.Columns[0]), col(t2.Columns[0])),
		Columns: append(append(Schema{}, t1.Columns...), t2.Columns...)}
	cond := and(cmp(">", col(t1.Columns[1]), lit(1)), cmp("=", col(t2.Columns[1]), lit(2)))
	p := OptimizeWith(&Filter{Input: j, Cond: cond}, []Rule{PushFilters{}})
	assertPlan(t, p, `
Filter: (b#5 = 2)
  Join: left on (a#1 = a#4)
    Scan: t1 columns=[a#1, b#2, c#3] filters=[(b#2 > 1)]
    Scan: t2 columns=[a#4, b#5, c#6]`)
}

func TestPushFiltersLeavesSubqueryConditionsInPlace(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2 := b.scan("t1"), b.scan("t2")
	exists := &Exists{Plan: &Filter{Input: t2, Cond: cmp("=", col(t2.Columns[0]), col(t1.Columns[0]))}}
	in := &Filter{Input: t1, Cond: exists}
	p, changed := PushFilters{}.Rewrite(in)
	if changed {
		t.Fatalf("a subquery condition must not be pushed into the scan:\n%s", Format(p))
	}
}

// TPC-H Q19's shape: the join condition repeated in every branch of an OR must become the
// join's key, not a cross join filtered row by row.
func TestPushFiltersFactorsTermsSharedByEveryBranchOfAnOr(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2 := b.scan("t1"), b.scan("t2")
	key := func() Expr { return cmp("=", col(t1.Columns[0]), col(t2.Columns[0])) }
	cond := or(
		and(key(), cmp(">", col(t1.Columns[1]), lit(1)), cmp("<", col(t2.Columns[1]), lit(2))),
		and(cmp(">", col(t1.Columns[1]), lit(5)), key()),
	)
	p := OptimizeWith(&Filter{Input: crossJoin(t1, t2), Cond: cond}, []Rule{PushFilters{}})
	assertPlan(t, p, `
Join: inner on ((a#1 = a#4) and (((b#2 > 1) and (b#5 < 2)) or (b#2 > 5)))
  Scan: t1 columns=[a#1, b#2, c#3]
  Scan: t2 columns=[a#4, b#5, c#6]`)
}

func TestPushFiltersFactorsAnOrBranchThatIsOnlySharedTerms(t *testing.T) {
	b := newPlanBuilder(t)
	t1 := b.scan("t1")
	cond := or(
		and(cmp(">", col(t1.Columns[0]), lit(1)), cmp("<", col(t1.Columns[1]), lit(2))),
		cmp(">", col(t1.Columns[0]), lit(1)),
	)
	p := OptimizeWith(&Filter{Input: t1, Cond: cond}, []Rule{PushFilters{}})
	assertPlan(t, p, `
Scan: t1 columns=[a#1, b#2, c#3] filters=[(a#1 > 1)]`)
}
