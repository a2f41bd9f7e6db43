package planner

import "testing"

func TestPushLimitThroughProjectionIntoScan(t *testing.T) {
	b := newPlanBuilder(t)
	t1 := b.scan("t1")
	p := OptimizeWith(&Limit{Input: b.project(t1, col(t1.Columns[1])), Offset: 2, Count: 3}, []Rule{PushLimit{}})
	assertPlan(t, p, `
Project: b#2 AS b#4
  Limit: offset=2 count=3
    Scan: t1 columns=[a#1, b#2, c#3] limit=5`)
}

func TestPushLimitStopsAtFilteredScan(t *testing.T) {
	b := newPlanBuilder(t)
	t1 := b.scan("t1")
	t1.Filters = []Expr{cmp(">", col(t1.Columns[0]), lit(1))}
	_, changed := PushLimit{}.Rewrite(&Limit{Input: t1, Count: 3})
	if changed {
		t.Fatal("a scan with filters must not take the limit: it would stop before finding enough rows")
	}
}

func TestPushLimitIgnoresUnboundedLimit(t *testing.T) {
	b := newPlanBuilder(t)
	_, changed := PushLimit{}.Rewrite(&Limit{Input: b.scan("t1"), Offset: 4, Count: -1})
	if changed {
		t.Fatal("an OFFSET without LIMIT gives the scan nothing to stop at")
	}
}
