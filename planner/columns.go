package planner

import "github.com/apache/arrow-go/v18/arrow"

// This file holds the small walks over plans and expressions that rules and physical planning
// share: which columns an expression reads, and which columns a plan produces.

// ExprColumns adds to set the IDs of every column e references, including references made
// from inside subquery plans to columns outside them.
func ExprColumns(e Expr, set map[ColumnID]bool) {
	switch e := e.(type) {
	case *ColumnRef:
		set[e.ID] = true
	case *Call:
		for _, a := range e.Args {
			ExprColumns(a, set)
		}
	case *Cast:
		ExprColumns(e.Expr, set)
	case *Case:
		if e.Operand != nil {
			ExprColumns(e.Operand, set)
		}
		for _, w := range e.Whens {
			ExprColumns(w.Cond, set)
			ExprColumns(w.Then, set)
		}
		if e.Else != nil {
			ExprColumns(e.Else, set)
		}
	case *AggregateCall:
		for _, a := range e.Args {
			ExprColumns(a, set)
		}
	case *ScalarSubquery:
		for id := range FreeColumns(e.Plan) {
			set[id] = true
		}
	case *Exists:
		for id := range FreeColumns(e.Plan) {
			set[id] = true
		}
	case *InSubquery:
		ExprColumns(e.Expr, set)
		for id := range FreeColumns(e.Plan) {
			set[id] = true
		}
	case *QuantifiedSubquery:
		ExprColumns(e.Expr, set)
		for id := range FreeColumns(e.Plan) {
			set[id] = true
		}
	}
}

// FreeColumns returns the columns p references but does not produce: the correlated
// references of a subquery plan to its enclosing queries. Empty for an uncorrelated plan.
func FreeColumns(p Plan) map[ColumnID]bool {
	used := map[ColumnID]bool{}
	produced := map[ColumnID]bool{}
	var walk func(Plan)
	walk = func(p Plan) {
		for _, c := range p.Schema() {
			produced[c.ID] = true
		}
		if s, ok := p.(*Scan); ok {
			for _, c := range s.FilterColumns {
				produced[c.ID] = true
			}
		}
		for _, e := range PlanExprs(p) {
			ExprColumns(e, used)
		}
		for _, c := range p.Children() {
			walk(c)
		}
	}
	walk(p)
	free := map[ColumnID]bool{}
	for id := range used {
		if !produced[id] {
			free[id] = true
		}
	}
	return free
}

// PlanExprs returns the expressions a node evaluates itself (not those of its children).
func PlanExprs(p Plan) []Expr {
	switch p := p.(type) {
	case *Scan:
		return p.Filters
	case *Values:
		var out []Expr
		for _, r := range p.Rows {
			out = append(out, r...)
		}
		return out
	case *Filter:
		return []Expr{p.Cond}
	case *Project:
		return p.Exprs
	case *Aggregate:
		out := append([]Expr(nil), p.GroupBy...)
		for _, a := range p.Aggs {
			out = append(out, a)
		}
		return out
	case *Join:
		if p.On != nil {
			return []Expr{p.On}
		}
	case *Sort:
		out := make([]Expr, len(p.Keys))
		for i, k := range p.Keys {
			out[i] = k.Expr
		}
		return out
	}
	return nil
}

// SchemaIDs returns the set of column IDs a schema holds.
func SchemaIDs(s Schema) map[ColumnID]bool {
	m := make(map[ColumnID]bool, len(s))
	for _, c := range s {
		m[c.ID] = true
	}
	return m
}

// IndexOf returns the position of the column with id in s, or -1.
func (s Schema) IndexOf(id ColumnID) int {
	for i, c := range s {
		if c.ID == id {
			return i
		}
	}
	return -1
}

// onlyFrom reports whether every column e references is in ids.
func onlyFrom(e Expr, ids map[ColumnID]bool) bool {
	used := map[ColumnID]bool{}
	ExprColumns(e, used)
	for id := range used {
		if !ids[id] {
			return false
		}
	}
	return true
}

// HasSubquery reports whether e contains a subquery expression.
func HasSubquery(e Expr) bool {
	found := false
	walkExpr(e, func(x Expr) {
		switch x.(type) {
		case *ScalarSubquery, *Exists, *InSubquery, *QuantifiedSubquery:
			found = true
		}
	})
	return found
}

// walkExpr calls f on e and every expression nested in it, outside subquery plans.
func walkExpr(e Expr, f func(Expr)) {
	if e == nil {
		return
	}
	f(e)
	switch e := e.(type) {
	case *Call:
		for _, a := range e.Args {
			walkExpr(a, f)
		}
	case *Cast:
		walkExpr(e.Expr, f)
	case *Case:
		walkExpr(e.Operand, f)
		for _, w := range e.Whens {
			walkExpr(w.Cond, f)
			walkExpr(w.Then, f)
		}
		walkExpr(e.Else, f)
	case *AggregateCall:
		for _, a := range e.Args {
			walkExpr(a, f)
		}
	case *InSubquery:
		walkExpr(e.Expr, f)
	case *QuantifiedSubquery:
		walkExpr(e.Expr, f)
	}
}

// conjuncts splits e on AND.
func conjuncts(e Expr) []Expr {
	return chain(e, "and")
}

// chain lists the operands of the tree of binary calls of f rooted at e, left to right, in
// time linear in their number and without recursion, whatever the tree's shape.
func chain(e Expr, f string) []Expr {
	var out []Expr
	stack := []Expr{e}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c, ok := x.(*Call); ok && c.Func == f && len(c.Args) == 2 {
			stack = append(stack, c.Args[1], c.Args[0])
			continue
		}
		out = append(out, x)
	}
	return out
}

// isConstant reports whether e reads no column at all.
func isConstant(e Expr) bool {
	used := map[ColumnID]bool{}
	ExprColumns(e, used)
	return len(used) == 0
}

// and joins conditions with AND; nil for none. Fewer than 64 conditions nest to the left, as
// the binder nests a short chain; more make a tree of such chains, about log2 n deep, so that
// no pass recurses once per condition (AND evaluates every operand and is associative, so the
// shape does not change the result).
func and(es ...Expr) Expr {
	if len(es) >= 64 {
		half := len(es) / 2
		return &Call{Func: "and", Args: []Expr{and(es[:half]...), and(es[half:]...)}, T: arrow.FixedWidthTypes.Boolean}
	}
	var out Expr
	for _, e := range es {
		if out == nil {
			out = e
			continue
		}
		out = &Call{Func: "and", Args: []Expr{out, e}, T: arrow.FixedWidthTypes.Boolean}
	}
	return out
}
