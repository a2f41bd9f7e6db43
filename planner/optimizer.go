package planner

import "context"

// Rule is one logical rewrite. Rewrite returns the plan it was given (and false) when it does
// not apply; it never mutates its input, it builds new nodes.
type Rule interface {
	Name() string
	Rewrite(p Plan) (Plan, bool)
}

// DefaultRules are the rules Optimize runs, in order, until none changes the plan.
func DefaultRules() []Rule {
	return []Rule{FoldConstants{}, Decorrelate{}, PushFilters{}, PushLimit{}}
}

// maxPasses bounds the fixpoint loop; rules are written to converge well before it.
const maxPasses = 16

// Optimize orders join clusters (ReorderJoins, once), rewrites p with DefaultRules and
// PushSemiJoins (which reads table statistics) to a fixpoint, orders the clusters that
// decorrelation joined a grouped aggregate to (and runs the rules again when it changed any),
// then prunes unused columns.
// Subquery plans inside expressions are optimized the same way; last, uncorrelated scalar
// subqueries of one row that filters compare with become joins (joinUncorrelatedScalars).
func Optimize(p Plan) Plan {
	out, _ := OptimizeContext(context.Background(), p)
	return out
}

// OptimizeContext is Optimize that gives up with ctx's error when ctx ends (its client has
// gone): it checks ctx before every pass of the rules and every subquery plan.
func OptimizeContext(ctx context.Context, p Plan) (Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p = inlineCTEs(p) // CTEs PlanQuery did not share: each reference on its own
	p, _ = ReorderJoins{Ctx: ctx}.Rewrite(p)
	p, err := optimizeWith(ctx, p, append(DefaultRules(), PushSemiJoins{Ctx: ctx}))
	if err != nil {
		return nil, err
	}
	// The joins Decorrelate added to clusters are ordered with them now.
	if q, changed := (ReorderJoins{Ctx: ctx, decorrelated: true}).Rewrite(p); changed {
		if p, err = optimizeWith(ctx, q, append(DefaultRules(), PushSemiJoins{Ctx: ctx})); err != nil {
			return nil, err
		}
	}
	p = pruneColumns(p)
	p = mapSubqueryPlans(p, func(sub Plan) Plan {
		if err != nil {
			return sub
		}
		var out Plan
		if out, err = OptimizeContext(ctx, sub); err != nil {
			return sub
		}
		return out
	})
	if err != nil {
		return nil, err
	}
	return joinUncorrelatedScalars(p), nil
}

// OptimizeWith is Optimize with an explicit rule list (for tests).
func OptimizeWith(p Plan, rules []Rule) Plan {
	out, _ := optimizeWith(context.Background(), p, rules)
	return out
}

// optimizeWith runs rules to a fixpoint (at most maxPasses passes), checking ctx before each.
func optimizeWith(ctx context.Context, p Plan, rules []Rule) (Plan, error) {
	for pass := 0; pass < maxPasses; pass++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		changed := false
		for _, r := range rules {
			var c bool
			p, c = r.Rewrite(p)
			changed = changed || c
		}
		if !changed {
			break
		}
	}
	return p, nil
}
