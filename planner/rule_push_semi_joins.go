package planner

import "context"

// PushSemiJoins moves a semi or anti join (EXISTS, IN, NOT EXISTS, NOT IN after Decorrelate)
// that sits on a cluster of inner joins down onto the one relation of the cluster its condition
// reads, when that relation is estimated to have fewer rows than the cluster's output: the
// semi join then probes fewer rows, and the rows it drops no longer flow through the other
// joins. Such a join keeps or drops a row by that relation's columns alone, so where it is
// applied does not change the result. TPC-H Q18 keeps the 57 orders of its IN subquery before
// joining six million lines with them instead of after; Q21's EXISTS over lines stays above its
// join, which leaves far fewer lines than the table has.
type PushSemiJoins struct {
	// Ctx bounds the reading of table statistics; nil means context.Background().
	Ctx context.Context
}

func (PushSemiJoins) Name() string { return "push_semi_joins" }

func (r PushSemiJoins) Rewrite(p Plan) (Plan, bool) {
	est := newEstimator(r.Ctx)
	return transformUp(p, func(p Plan) (Plan, bool) {
		j, ok := p.(*Join)
		if !ok || (j.Kind != SemiJoin && j.Kind != AntiJoin && j.Kind != NullAwareAntiJoin) || j.On == nil {
			return p, false
		}
		var rels []Plan
		var conds []Expr
		if !collectJoinCluster(j.Left, &rels, &conds) {
			return p, false
		}
		target := semiJoinTarget(j, rels)
		if target == nil || est.estimate(target).rows >= est.estimate(j.Left).rows {
			return p, false
		}
		pushed := &Join{Left: target, Right: j.Right, Kind: j.Kind, On: j.On, Columns: target.Schema()}
		return replacePlan(j.Left, target, pushed), true
	})
}

// semiJoinTarget is the relation of rels that holds every column of j's left side its
// condition reads, nil when there is none (the condition reads several, or columns of neither
// side: an enclosing query's).
func semiJoinTarget(j *Join, rels []Plan) Plan {
	used := map[ColumnID]bool{}
	ExprColumns(j.On, used)
	right := SchemaIDs(j.Right.Schema())
	var target Plan
	for id := range used {
		if right[id] {
			continue
		}
		var owner Plan
		for _, r := range rels {
			if SchemaIDs(r.Schema())[id] {
				owner = r
				break
			}
		}
		if owner == nil || (target != nil && owner != target) {
			return nil
		}
		target = owner
	}
	return target
}

// replacePlan returns p with the node old (compared by identity) replaced by repl.
func replacePlan(p, old, repl Plan) Plan {
	if p == old {
		return repl
	}
	kids := p.Children()
	if len(kids) == 0 {
		return p
	}
	out := make([]Plan, len(kids))
	changed := false
	for i, k := range kids {
		out[i] = replacePlan(k, old, repl)
		changed = changed || out[i] != k
	}
	if !changed {
		return p
	}
	return withChildren(p, out)
}
