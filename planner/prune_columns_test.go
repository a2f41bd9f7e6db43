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

func TestPruneColumnsReadsFilterOnlyColumnsWithoutOutputtingThem(t *testing.T) {
	b := newPlanBuilder(t)
	t1 := b.scan("t1")
	t1.Filters = []Expr{cmp(">", col(t1.Columns[2]), lit(5))}
	p := pruneColumns(b.project(t1, col(t1.Columns[0])))
	assertPlan(t, p, `
Project: a#1 AS a#4
  Scan: t1 columns=[a#1] filters=[(c#3 > 5)]`)
	s := p.(*Project).Input.(*Scan)
	if len(s.FilterColumns) != 1 || s.FilterColumns[0].ID != t1.Columns[2].ID || s.FilterIndices[0] != 2 {
		t.Fatalf("filter-only columns %v (indices %v), want c (table column 2)", s.FilterColumns, s.FilterIndices)
	}
	if free := FreeColumns(p); len(free) != 0 {
		t.Errorf("a filter-only column counts as a free (correlated) column: %v", free)
	}
	// Pruning again, now needing c above, makes it an output column.
	again := prune(s, map[ColumnID]bool{t1.Columns[2].ID: true}).(*Scan)
	if len(again.Columns) != 1 || again.Columns[0].ID != t1.Columns[2].ID || len(again.FilterColumns) != 0 {
		t.Errorf("pruned again for c: columns %v, filter-only %v", again.Columns, again.FilterColumns)
	}
}

func TestPruneColumnsKeepsAFilterColumnForCounting(t *testing.T) {
	b := newPlanBuilder(t)
	t1 := b.scan("t1")
	t1.Filters = []Expr{cmp(">", col(t1.Columns[1]), lit(5))}
	p := pruneColumns(b.project(t1, lit(1)))
	assertPlan(t, p, `
Project: 1 AS 1#4
  Scan: t1 columns=[b#2] filters=[(b#2 > 5)]`)
}
