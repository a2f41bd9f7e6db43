package planner

import "testing"

func TestPushSemiJoins(t *testing.T) {
	b := newPlanBuilder(t)
	fact := b.statsScan("fact", 6_000_000, colSpec{"o", 1, 1_500_000, -1})
	dim := b.statsScan("dim", 1_500_000, colSpec{"o", 1, 1_500_000, -1}, colSpec{"c", 1, 100, -1})
	sub := b.statsScan("sub", 100, colSpec{"o", 1, 1_500_000, -1})
	cluster := &Join{Left: fact, Right: dim, Kind: InnerJoin, On: cmp("=", col(fact.Columns[0]), col(dim.Columns[0])),
		Columns: append(append(Schema{}, fact.Schema()...), dim.Schema()...)}
	semi := func(kind JoinKind, on Expr, left Plan) *Join {
		return &Join{Left: left, Right: sub, Kind: kind, On: on, Columns: left.Schema()}
	}

	// dim.o IN (SELECT o FROM sub): the join leaves 6M rows, dim has 1.5M: the semi join moves
	// onto dim.
	for _, kind := range []JoinKind{SemiJoin, AntiJoin, NullAwareAntiJoin} {
		p, changed := PushSemiJoins{}.Rewrite(semi(kind, cmp("=", col(dim.Columns[0]), col(sub.Columns[0])), cluster))
		if !changed {
			t.Fatalf("%s join on dim's column was not pushed", kind)
		}
		j, ok := p.(*Join)
		if !ok || j.Kind != InnerJoin || j.Left != fact {
			t.Fatalf("%s: top is not the inner join over fact:\n%s", kind, Format(p))
		}
		pushed, ok := j.Right.(*Join)
		if !ok || pushed.Kind != kind || pushed.Left != dim || pushed.Right != sub {
			t.Fatalf("%s: dim is not %s-joined with sub:\n%s", kind, kind, Format(p))
		}
		if got, want := len(p.Schema()), len(cluster.Schema()); got != want {
			t.Errorf("%s: %d output columns, want %d", kind, got, want)
		}
	}

	// A filter on dim leaves the join fewer rows than fact has: a semi join on fact's
	// column stays above.
	narrow := &Join{Left: fact, Right: &Filter{Input: dim, Cond: cmp("=", col(dim.Columns[1]), lit(3))}, Kind: InnerJoin,
		On: cmp("=", col(fact.Columns[0]), col(dim.Columns[0])), Columns: cluster.Columns}
	if p, changed := (PushSemiJoins{}).Rewrite(semi(SemiJoin, cmp("=", col(fact.Columns[0]), col(sub.Columns[0])), narrow)); changed {
		t.Errorf("semi join pushed onto fact (6M rows) below a join of 60k:\n%s", Format(p))
	}

	// A condition reading both relations of the cluster stays above it.
	both := and(cmp("=", col(dim.Columns[0]), col(sub.Columns[0])), cmp("<>", col(fact.Columns[0]), col(sub.Columns[0])))
	if p, changed := (PushSemiJoins{}).Rewrite(semi(SemiJoin, both, cluster)); changed {
		t.Errorf("semi join reading two relations was pushed:\n%s", Format(p))
	}
}
