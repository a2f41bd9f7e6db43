package planner

import "testing"

func TestDecorrelateExistsBecomesSemiJoin(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2 := b.scan("t1"), b.scan("t2")
	sub := b.project(&Filter{Input: t2, Cond: and(
		cmp("=", col(t2.Columns[0]), col(t1.Columns[0])),
		cmp(">", col(t2.Columns[1]), lit(3)),
	)}, lit(1))
	p := OptimizeWith(&Filter{Input: t1, Cond: &Exists{Plan: sub}}, []Rule{Decorrelate{}})
	assertPlan(t, p, `
Join: semi on (a#4 = a#1)
  Scan: t1 columns=[a#1, b#2, c#3]
  Project: 1 AS 1#7, a#4 AS a#4, b#5 AS b#5, c#6 AS c#6
    Filter: (b#5 > 3)
      Scan: t2 columns=[a#4, b#5, c#6]`)
}

func TestDecorrelateNotInBecomesNullAwareAntiJoin(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2 := b.scan("t1"), b.scan("t2")
	sub := b.project(t2, col(t2.Columns[2]))
	p := OptimizeWith(&Filter{Input: t1, Cond: &InSubquery{Expr: col(t1.Columns[1]), Plan: sub, Negated: true}}, []Rule{Decorrelate{}})
	assertPlan(t, p, `
Join: null-aware anti on (b#2 = c#7)
  Scan: t1 columns=[a#1, b#2, c#3]
  Project: c#6 AS c#7, a#4 AS a#4, b#5 AS b#5, c#6 AS c#6
    Scan: t2 columns=[a#4, b#5, c#6]`)
}

func TestDecorrelateLeavesSubqueryUnderOrAlone(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2 := b.scan("t1"), b.scan("t2")
	exists := &Exists{Plan: &Filter{Input: t2, Cond: cmp("=", col(t2.Columns[0]), col(t1.Columns[0]))}}
	cond := &Call{Func: "or", Args: []Expr{exists, cmp(">", col(t1.Columns[0]), lit(1))}}
	_, changed := Decorrelate{}.Rewrite(&Filter{Input: t1, Cond: cond})
	if changed {
		t.Fatal("EXISTS under OR is not a filter conjunct: turning it into a semi join would drop rows")
	}
}

func TestDecorrelateLeavesCorrelatedNotInAlone(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2 := b.scan("t1"), b.scan("t2")
	sub := b.project(&Filter{Input: t2, Cond: cmp("=", col(t2.Columns[0]), col(t1.Columns[0]))}, col(t2.Columns[1]))
	_, changed := Decorrelate{}.Rewrite(&Filter{Input: t1, Cond: &InSubquery{Expr: col(t1.Columns[1]), Plan: sub, Negated: true}})
	if changed {
		t.Fatal("a correlated NOT IN has per-row NULL semantics a null-aware anti join does not model")
	}
}

func TestDecorrelateNotAroundExistsBecomesAntiJoin(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2 := b.scan("t1"), b.scan("t2")
	exists := &Exists{Plan: &Filter{Input: t2, Cond: cmp("=", col(t2.Columns[0]), col(t1.Columns[0]))}}
	notExists := &Call{Func: "not", Args: []Expr{exists}, T: exists.Type()}
	p := OptimizeWith(&Filter{Input: t1, Cond: notExists}, []Rule{Decorrelate{}})
	assertPlan(t, p, `
Join: anti on (a#4 = a#1)
  Scan: t1 columns=[a#1, b#2, c#3]
  Scan: t2 columns=[a#4, b#5, c#6]`)
}

func TestDecorrelateLeavesConstantNotInAlone(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2 := b.scan("t1"), b.scan("t2")
	sub := b.project(t2, col(t2.Columns[2]))
	_, changed := Decorrelate{}.Rewrite(&Filter{Input: t1, Cond: &InSubquery{Expr: lit(7), Plan: sub, Negated: true}})
	if changed {
		t.Fatal("7 NOT IN (…) gives a null-aware anti join no key to hash on")
	}
}
