package planner

import "testing"

func TestPruneColumnsNarrowsScans(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2 := b.scan("t1"), b.scan("t2")
	j := &Join{Left: t1, Right: t2, Kind: InnerJoin, On: cmp("=", col(t1.Columns[0]), col(t2.Columns[0])),
		Columns: append(append(Schema{}, t1.Columns...), t2.Columns...)}
	p := pruneColumns(b.project(j, col(t1.Columns[2])))
	assertPlan(t, p, `
Project: c#3 AS c#7
  Join: inner on (a#1 = a#4)
    Scan: t1 columns=[a#1, c#3]
    Scan: t2 columns=[a#4]`)
}

func TestPruneColumnsKeepsEveryColumnUnderDistinct(t *testing.T) {
	b := newPlanBuilder(t)
	t1 := b.scan("t1")
	p := pruneColumns(b.project(&Distinct{Input: t1}, col(t1.Columns[0])))
	assertPlan(t, p, `
Project: a#1 AS a#4
  Distinct
    Scan: t1 columns=[a#1, b#2, c#3]`)
}

func TestPruneColumnsKeepsOneColumnForCounting(t *testing.T) {
	b := newPlanBuilder(t)
	t1 := b.scan("t1")
	p := pruneColumns(b.project(t1, lit(1)))
	assertPlan(t, p, `
Project: 1 AS 1#4
  Scan: t1 columns=[a#1]`)
}
