package planner

import "testing"

// maxOf returns SELECT max(c) FROM in [GROUP BY group...] as a plan of one column.
func (b *planBuilder) maxOf(in *Scan, group ...Expr) Plan {
	c := in.Columns[2]
	agg := &Aggregate{Input: in, GroupBy: group, Aggs: []*AggregateCall{{Func: "max", Args: []Expr{col(c)}, T: c.Type}}}
	for _, g := range group {
		agg.Columns = append(agg.Columns, Column{ID: g.(*ColumnRef).ID, Name: g.(*ColumnRef).Name, Type: g.Type(), Nullable: true})
	}
	agg.Columns = append(agg.Columns, Column{ID: b.next, Name: "max(c)", Type: c.Type, Nullable: true})
	b.next++
	return b.project(agg, col(agg.Columns[len(agg.Columns)-1]))
}

func TestUncorrelatedScalarSubqueryBecomesJoin(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2 := b.scan("t1"), b.scan("t2")
	cond := cmp(">", col(t1.Columns[1]), &ScalarSubquery{Plan: b.maxOf(t2)})
	p := joinUncorrelatedScalars(&Filter{Input: t1, Cond: and(cond, cmp("<", col(t1.Columns[0]), lit(9)))})
	assertPlan(t, p, `
Project: a#1 AS a#1, b#2 AS b#2, c#3 AS c#3
  Filter: (a#1 < 9)
    Join: inner on (b#2 > max(c)#8)
      Scan: t1 columns=[a#1, b#2, c#3]
      Project: max(c)#7 AS max(c)#8
        Aggregate: group=[] aggs=[max(c#6)]
          Scan: t2 columns=[a#4, b#5, c#6]`)
}

// A subquery that may yield no row or several stays an expression: a join would drop every
// row (no row) or repeat rows (several), where the subquery is NULL or an error.
func TestUncorrelatedScalarSubqueryOfManyRowsStays(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2 := b.scan("t1"), b.scan("t2")
	grouped := b.maxOf(t2, col(t2.Columns[0]))
	m := b.maxOf(t2)
	having := b.project(&Filter{Input: m, Cond: cmp(">", col(m.Schema()[0]), lit(1))}, col(m.Schema()[0]))
	for name, sub := range map[string]Plan{"grouped": grouped, "filtered": having, "a scan": b.project(t2, col(t2.Columns[2]))} {
		if len(FreeColumns(sub)) > 0 || len(sub.Schema()) != 1 {
			t.Fatalf("%s: the test's subquery is not uncorrelated of one column", name)
		}
		in := &Filter{Input: t1, Cond: cmp("=", col(t1.Columns[1]), &ScalarSubquery{Plan: sub})}
		if joinUncorrelatedScalars(in) != in {
			t.Errorf("%s subquery became a join", name)
		}
	}
}
