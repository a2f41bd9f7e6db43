package planner

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

// Optimize orders join clusters (ReorderJoins, once), rewrites p with DefaultRules to a
// fixpoint, then prunes unused columns. Subquery plans inside expressions are optimized the same
// way.
func Optimize(p Plan) Plan {
	p, _ = ReorderJoins{}.Rewrite(p)
	p = OptimizeWith(p, DefaultRules())
	p = pruneColumns(p)
	return mapSubqueryPlans(p, Optimize)
}

// OptimizeWith is Optimize with an explicit rule list (for tests).
func OptimizeWith(p Plan, rules []Rule) Plan {
	for pass := 0; pass < maxPasses; pass++ {
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
	return p
}
