package planner

// CTEKey identifies one common table expression as the binder saw it (one WITH item in one
// binding of its WITH). Every reference the binder makes to it carries the same key, and
// their plans are equivalent: a CTE's query reads no column of an enclosing query, so each
// binding of it computes the same rows (in its own column IDs).
type CTEKey struct {
	Name string
}

// CTERef is one reference to a CTE in a bound plan: Input is the reference's own binding of
// the CTE's query. It is transparent (its schema and only child are Input's) until planning,
// which either keeps each reference's own binding (inlineCTEs, what every optimizer entry
// point does) or, for a query run in one process, computes the CTE once and shares it among
// its references (shareCTEs).
type CTERef struct {
	Key   *CTEKey
	Input Plan
}

// SharedRef reads the result of Input, a plan computed once per execution of the query and
// shared by pointer among every SharedRef with the same Key. It is a leaf: rules do not
// rewrite Input through it (a filter above one reference must not reach the plan the others
// read), so Input is optimized once, on its own, before it is shared. Columns are this
// reference's columns, position by position Input's.
type SharedRef struct {
	Key     *CTEKey
	Input   Plan
	Columns []Column
}

func (*CTERef) plan()    {}
func (*SharedRef) plan() {}

func (p *CTERef) Schema() Schema    { return p.Input.Schema() }
func (p *SharedRef) Schema() Schema { return p.Columns }

func (p *CTERef) Children() []Plan    { return []Plan{p.Input} }
func (p *SharedRef) Children() []Plan { return nil }

// hasCTERefs reports whether p or a subquery plan inside it holds a CTERef.
func hasCTERefs(p Plan) bool {
	found := false
	walkPlans(p, func(n Plan) bool {
		if _, ok := n.(*CTERef); ok {
			found = true
		}
		return !found
	})
	return found
}

// walkPlans calls f on p's nodes top-down, entering subquery plans and children while f
// returns true.
func walkPlans(p Plan, f func(Plan) bool) {
	if !f(p) {
		return
	}
	for _, e := range PlanExprs(p) {
		for _, sub := range subqueryPlans(e) {
			walkPlans(sub, f)
		}
	}
	for _, c := range p.Children() {
		walkPlans(c, f)
	}
}

// subqueryPlans are the plans of the subquery expressions in e (not those nested in them).
func subqueryPlans(e Expr) []Plan {
	var out []Plan
	walkExpr(e, func(x Expr) {
		switch x := x.(type) {
		case *ScalarSubquery:
			out = append(out, x.Plan)
		case *Exists:
			out = append(out, x.Plan)
		case *InSubquery:
			out = append(out, x.Plan)
		case *QuantifiedSubquery:
			out = append(out, x.Plan)
		}
	})
	return out
}

// inlineCTEs replaces every CTERef of p (and of its subquery plans) by the reference's own
// binding: each reference is then planned on its own, like a derived table.
func inlineCTEs(p Plan) Plan {
	if !hasCTERefs(p) {
		return p
	}
	out, _ := transformUp(p, func(n Plan) (Plan, bool) {
		if r, ok := n.(*CTERef); ok {
			return r.Input, true
		}
		return n, false
	})
	return mapSubqueryPlans(out, inlineCTEs)
}
