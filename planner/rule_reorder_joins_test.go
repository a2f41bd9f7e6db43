package planner

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestReorderJoinsFollowsConditionsNotWrittenOrder(t *testing.T) {
	b := newPlanBuilder(t)
	for _, name := range []string{"t3", "t4"} {
		s := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
		if _, err := b.cat.CreateTable(context.Background(), name, s, false); err != nil {
			t.Fatal(err)
		}
	}
	t1, t2, t3, t4 := b.scan("t1"), b.scan("t2"), b.scan("t3"), b.scan("t4")
	// FROM t1, t2, t3, t4 WHERE t1.a = t3.a AND t3.a = t4.a AND t4.a = t2.b: written order pairs
	// t1 with t2, which share no condition.
	tree := crossJoin(crossJoin(crossJoin(t1, t2), t3), t4)
	cond := and(
		cmp("=", col(t1.Columns[0]), col(t3.Columns[0])),
		cmp("=", col(t3.Columns[0]), col(t4.Columns[0])),
		cmp("=", col(t4.Columns[0]), col(t2.Columns[1])),
		cmp(">", col(t2.Columns[2]), lit(3)),
	)
	p, changed := ReorderJoins{}.Rewrite(&Filter{Input: tree, Cond: cond})
	if !changed {
		t.Fatal("a four-relation cluster was left alone")
	}
	var joins []*Join
	var walk func(Plan)
	walk = func(p Plan) {
		if j, ok := p.(*Join); ok {
			joins = append(joins, j)
		}
		for _, c := range p.Children() {
			walk(c)
		}
	}
	walk(p)
	if len(joins) != 3 {
		t.Fatalf("got %d joins, want 3:\n%s", len(joins), Format(p))
	}
	for _, j := range joins {
		if j.Kind != InnerJoin || j.On == nil {
			t.Errorf("join without a condition: every relation is connected, so none should be a cross join:\n%s", Format(p))
		}
	}
	// The cluster's column order is kept for the operators above it.
	want := tree.Schema()
	got := p.Schema()
	for i := range want {
		if got[i].ID != want[i].ID {
			t.Fatalf("column %d is %s, want %s", i, got[i].Name, want[i].Name)
		}
	}
}

func TestReorderJoinsLeavesTwoRelationsToPushdown(t *testing.T) {
	b := newPlanBuilder(t)
	t1, t2 := b.scan("t1"), b.scan("t2")
	if _, changed := (ReorderJoins{}).Rewrite(&Filter{Input: crossJoin(t1, t2), Cond: cmp("=", col(t1.Columns[0]), col(t2.Columns[0]))}); changed {
		t.Fatal("two relations need no ordering")
	}
}
