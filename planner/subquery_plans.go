package planner

// mapSubqueryPlans returns p with f applied to the plan of every subquery expression held by
// p's nodes (not recursively: f is expected to recurse itself).
func mapSubqueryPlans(p Plan, f func(Plan) Plan) Plan {
	// A node holding a subquery reports itself changed, so that transformUp rebuilds its
	// ancestors around the copy; otherwise the mapped plans below the root would be dropped.
	out, _ := transformUp(p, func(n Plan) (Plan, bool) {
		held := false
		m := mapNodeExprs(n, func(e Expr) Expr {
			held = held || HasSubquery(e)
			return mapExprSubqueries(e, f)
		})
		return m, held
	})
	return out
}

// mapExprSubqueries rebuilds e with f applied to each subquery plan in it.
func mapExprSubqueries(e Expr, f func(Plan) Plan) Expr {
	if e == nil || !HasSubquery(e) {
		return e
	}
	return rewriteExpr(e, func(x Expr) (Expr, bool) {
		switch x := x.(type) {
		case *ScalarSubquery:
			return &ScalarSubquery{Plan: f(x.Plan)}, true
		case *Exists:
			return &Exists{Plan: f(x.Plan), Negated: x.Negated}, true
		case *InSubquery:
			return &InSubquery{Expr: mapExprSubqueries(x.Expr, f), Plan: f(x.Plan), Negated: x.Negated}, true
		case *QuantifiedSubquery:
			return &QuantifiedSubquery{Expr: mapExprSubqueries(x.Expr, f), Op: x.Op, All: x.All, Plan: f(x.Plan)}, true
		}
		return nil, false
	})
}

// mapNodeExprs returns a copy of n with f applied to each expression the node evaluates.
func mapNodeExprs(n Plan, f func(Expr) Expr) Plan {
	mapAll := func(es []Expr) []Expr {
		out := make([]Expr, len(es))
		for i, e := range es {
			out[i] = f(e)
		}
		return out
	}
	switch n := n.(type) {
	case *Scan:
		c := *n
		c.Filters = mapAll(n.Filters)
		return &c
	case *Values:
		c := *n
		c.Rows = make([][]Expr, len(n.Rows))
		for i, r := range n.Rows {
			c.Rows[i] = mapAll(r)
		}
		return &c
	case *Filter:
		return &Filter{Input: n.Input, Cond: f(n.Cond)}
	case *Project:
		c := *n
		c.Exprs = mapAll(n.Exprs)
		return &c
	case *Aggregate:
		c := *n
		c.GroupBy = mapAll(n.GroupBy)
		c.Aggs = make([]*AggregateCall, len(n.Aggs))
		for i, a := range n.Aggs {
			c.Aggs[i] = f(a).(*AggregateCall)
		}
		return &c
	case *Join:
		c := *n
		if n.On != nil {
			c.On = f(n.On)
		}
		return &c
	case *Sort:
		c := *n
		c.Keys = make([]SortKey, len(n.Keys))
		for i, k := range n.Keys {
			c.Keys[i] = SortKey{Expr: f(k.Expr), Desc: k.Desc}
		}
		return &c
	}
	return n
}
