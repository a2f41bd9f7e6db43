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

// substitute returns e with every ColumnRef whose ID is in repl replaced by repl's expression.
// It does not descend into subquery plans: callers avoid substituting into expressions that
// contain subqueries.
func substitute(e Expr, repl map[ColumnID]Expr) Expr {
	switch e := e.(type) {
	case *ColumnRef:
		if r, ok := repl[e.ID]; ok {
			return r
		}
		return e
	case *Call:
		c := *e
		c.Args = make([]Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = substitute(a, repl)
		}
		return &c
	case *Cast:
		c := *e
		c.Expr = substitute(e.Expr, repl)
		return &c
	case *Case:
		c := *e
		if e.Operand != nil {
			c.Operand = substitute(e.Operand, repl)
		}
		c.Whens = make([]When, len(e.Whens))
		for i, w := range e.Whens {
			c.Whens[i] = When{Cond: substitute(w.Cond, repl), Then: substitute(w.Then, repl)}
		}
		if e.Else != nil {
			c.Else = substitute(e.Else, repl)
		}
		return &c
	}
	return e
}
