package planner

// withChildren returns a shallow copy of p whose inputs are children (in Children() order).
// Rules use it to rebuild a node after rewriting below it; the original is never mutated.
func withChildren(p Plan, children []Plan) Plan {
	switch p := p.(type) {
	case *Filter:
		c := *p
		c.Input = children[0]
		return &c
	case *Project:
		c := *p
		c.Input = children[0]
		return &c
	case *Aggregate:
		c := *p
		c.Input = children[0]
		return &c
	case *Join:
		c := *p
		c.Left, c.Right = children[0], children[1]
		return &c
	case *Sort:
		c := *p
		c.Input = children[0]
		return &c
	case *Limit:
		c := *p
		c.Input = children[0]
		return &c
	case *Distinct:
		c := *p
		c.Input = children[0]
		return &c
	case *Union:
		c := *p
		c.Inputs = children
		return &c
	case *CTERef:
		c := *p
		c.Input = children[0]
		return &c
	}
	return p
}

// transformUp applies f to every node of p, children first, rebuilding parents whose children
// changed. It reports whether anything changed.
func transformUp(p Plan, f func(Plan) (Plan, bool)) (Plan, bool) {
	changed := false
	kids := p.Children()
	if len(kids) > 0 {
		newKids := make([]Plan, len(kids))
		for i, k := range kids {
			nk, c := transformUp(k, f)
			newKids[i] = nk
			changed = changed || c
		}
		if changed {
			p = withChildren(p, newKids)
		}
	}
	np, c := f(p)
	return np, changed || c
}

// rewriteExpr rebuilds e top-down: where f returns (x, true), x replaces the node and is not
// descended into; elsewhere the node is copied with its operands rewritten. Subquery plans are
// not entered (f sees the subquery nodes themselves). e itself is never mutated.
func rewriteExpr(e Expr, f func(Expr) (Expr, bool)) Expr {
	if e == nil {
		return nil
	}
	if x, ok := f(e); ok {
		return x
	}
	switch e := e.(type) {
	case *Call:
		c := *e
		c.Args = rewriteExprs(e.Args, f)
		return &c
	case *Cast:
		c := *e
		c.Expr = rewriteExpr(e.Expr, f)
		return &c
	case *Case:
		c := *e
		c.Operand = rewriteExpr(e.Operand, f)
		c.Whens = make([]When, len(e.Whens))
		for i, w := range e.Whens {
			c.Whens[i] = When{Cond: rewriteExpr(w.Cond, f), Then: rewriteExpr(w.Then, f)}
		}
		c.Else = rewriteExpr(e.Else, f)
		return &c
	case *AggregateCall:
		c := *e
		c.Args = rewriteExprs(e.Args, f)
		return &c
	case *InSubquery:
		c := *e
		c.Expr = rewriteExpr(e.Expr, f)
		return &c
	case *QuantifiedSubquery:
		c := *e
		c.Expr = rewriteExpr(e.Expr, f)
		return &c
	}
	return e
}

func rewriteExprs(es []Expr, f func(Expr) (Expr, bool)) []Expr {
	out := make([]Expr, len(es))
	for i, e := range es {
		out[i] = rewriteExpr(e, f)
	}
	return out
}

// substitute returns e with every ColumnRef whose ID is in repl replaced by repl's expression.
// It does not descend into subquery plans: callers avoid substituting into expressions that
// contain subqueries.
func substitute(e Expr, repl map[ColumnID]Expr) Expr {
	return rewriteExpr(e, func(x Expr) (Expr, bool) {
		if c, ok := x.(*ColumnRef); ok {
			if r, found := repl[c.ID]; found {
				return r, true
			}
		}
		return nil, false
	})
}
