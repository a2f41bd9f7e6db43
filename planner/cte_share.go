package planner

import (
	"context"

	"github.com/cachedb/cachedb/exec"
)

// shareCTEs replaces the references of each CTE that p reads more than once, and whose query
// aggregates (see worthSharing), by SharedRefs of one plan: the first reference's binding,
// optimized on its own. The query then computes that CTE once per execution (see
// exec.SharedResult) instead of once per reference. Every other reference keeps its own
// binding, as inlineCTEs does.
//
// Each CTE is decided once, so its references either all read the shared plan or all keep
// their own; both compute the same rows. References are counted as the shared plans will be
// read: a reference inside a CTE that is itself shared counts once, however often that CTE is
// referenced.
func shareCTEs(ctx context.Context, p Plan) (Plan, error) {
	if !hasCTERefs(p) {
		return p, nil
	}
	s := &cteSharer{ctx: ctx, refs: map[*CTEKey]int{}, first: map[*CTEKey]Plan{}, shared: map[*CTEKey]Plan{}}
	s.count(p)
	out := s.rewrite(p)
	return out, s.err
}

type cteSharer struct {
	ctx context.Context
	// refs counts the references to each CTE; first is the binding of its first reference.
	refs  map[*CTEKey]int
	first map[*CTEKey]Plan
	// shared holds the optimized plan of each shared CTE, once made.
	shared map[*CTEKey]Plan
	err    error
}

// count counts the CTE references of p, entering each CTE's query once (through its first
// reference: the one a shared CTE computes).
func (s *cteSharer) count(p Plan) {
	walkPlans(p, func(n Plan) bool {
		r, ok := n.(*CTERef)
		if !ok {
			return true
		}
		s.refs[r.Key]++
		if _, seen := s.first[r.Key]; !seen {
			s.first[r.Key] = r.Input
			s.count(r.Input)
		}
		return false
	})
}

// share reports whether the references to key read one shared plan.
func (s *cteSharer) share(key *CTEKey) bool {
	in := s.first[key]
	return s.refs[key] >= 2 && worthSharing(in) && len(FreeColumns(in)) == 0
}

// worthSharing reports whether computing p once and keeping its rows is likely cheaper than
// computing it for each reference: when it aggregates (GROUP BY, an aggregate, DISTINCT), its
// result is usually far smaller than what it reads. A CTE that only filters or joins tables
// stays inlined, so each reference keeps the filters pushed into its scans from above.
func worthSharing(p Plan) bool {
	found := false
	walkPlans(p, func(n Plan) bool {
		switch n.(type) {
		case *Aggregate, *Distinct:
			found = true
		}
		return !found
	})
	return found
}

// rewrite replaces p's CTE references (and those of its subquery plans).
func (s *cteSharer) rewrite(p Plan) Plan {
	if s.err != nil || !hasCTERefs(p) {
		return p
	}
	out, _ := transformUp(p, func(n Plan) (Plan, bool) {
		r, ok := n.(*CTERef)
		if !ok {
			return n, false
		}
		if !s.share(r.Key) {
			return r.Input, true
		}
		return &SharedRef{Key: r.Key, Input: s.sharedPlan(r.Key), Columns: r.Input.Schema()}, true
	})
	return mapSubqueryPlans(out, s.rewrite)
}

// sharedPlan is the optimized plan every reference to key reads, made on first use.
func (s *cteSharer) sharedPlan(key *CTEKey) Plan {
	if p, ok := s.shared[key]; ok {
		return p
	}
	p := s.rewrite(s.first[key])
	if s.err == nil {
		p, s.err = OptimizeContext(s.ctx, p)
	}
	if s.err != nil {
		p = s.first[key]
	}
	s.shared[key] = p
	return p
}

// planShared plans a reference to a shared CTE: a read of the one exec.SharedResult that
// computes the CTE's plan, made for its first reference. A distributed plan never holds
// SharedRefs (PlanDistributed inlines every CTE), so the result is computed where the query
// runs.
func (pp *physicalPlanner) planShared(p *SharedRef) (exec.Operator, error) {
	res, ok := pp.shared[p.Key]
	if !ok {
		// The CTE reads no enclosing query's columns: plan it as a query of its own.
		saved := pp.outer
		pp.outer = nil
		in, err := pp.plan(p.Input)
		pp.outer = saved
		if err != nil {
			return nil, err
		}
		res = exec.NewSharedResult(in, p.Key.Name)
		if pp.shared == nil {
			pp.shared = map[*CTEKey]*exec.SharedResult{}
		}
		pp.shared[p.Key] = res
	}
	return exec.NewSharedRead(res, arrowSchema(p.Columns))
}
