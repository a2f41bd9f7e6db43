package sql

import (
	"fmt"
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/planner"
)

// exprKey identifies an expression structurally: two expressions with the same key compute the
// same value over the same columns. Expressions holding a subquery are only equal to themselves.
func exprKey(e planner.Expr) string {
	if planner.HasSubquery(e) {
		return fmt.Sprintf("%p", e)
	}
	return e.String() + "::" + e.Type().String()
}

// grouping rewrites expressions bound over an aggregate's input so that they read only the
// aggregate's output: a sub-expression equal to a GROUP BY key becomes a reference to the key's
// column, and any other input column is wrapped in ANY_VALUE (MySQL without
// ONLY_FULL_GROUP_BY lets such columns through, with a value from some row of the group).
type grouping struct {
	keys    []planner.Expr
	columns []planner.Column // output column of each key
	input   map[planner.ColumnID]bool
	agg     *aggregation
	keyText []string // exprKey of each key, computed on first use
}

// lift rewrites e as described on grouping. It never mutates e; subquery plans inside it, which
// the binder built for this expression alone, have their correlated references re-pointed in
// place.
func (b *binder) lift(g *grouping, e planner.Expr) (planner.Expr, error) {
	if len(g.keys) > 0 {
		if g.keyText == nil {
			for _, k := range g.keys {
				g.keyText = append(g.keyText, exprKey(k))
			}
		}
		key := exprKey(e)
		for i, k := range g.keyText {
			if k == key {
				return columnRef(g.columns[i]), nil
			}
		}
	}
	switch e := e.(type) {
	case *planner.ColumnRef:
		if !g.input[e.ID] {
			return e, nil
		}
		return b.anyValue(g, e)
	case *planner.Call:
		args, err := b.liftAll(g, e.Args)
		if err != nil {
			return nil, err
		}
		return &planner.Call{Func: e.Func, Args: args, T: e.T}, nil
	case *planner.Cast:
		x, err := b.lift(g, e.Expr)
		if err != nil {
			return nil, err
		}
		return &planner.Cast{Expr: x, To: e.To}, nil
	case *planner.Case:
		out := &planner.Case{T: e.T}
		var err error
		if e.Operand != nil {
			if out.Operand, err = b.lift(g, e.Operand); err != nil {
				return nil, err
			}
		}
		for _, w := range e.Whens {
			c, err := b.lift(g, w.Cond)
			if err != nil {
				return nil, err
			}
			t, err := b.lift(g, w.Then)
			if err != nil {
				return nil, err
			}
			out.Whens = append(out.Whens, planner.When{Cond: c, Then: t})
		}
		if e.Else != nil {
			if out.Else, err = b.lift(g, e.Else); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *planner.ScalarSubquery:
		return e, b.liftSubquery(g, e.Plan)
	case *planner.Exists:
		return e, b.liftSubquery(g, e.Plan)
	case *planner.InSubquery:
		x, err := b.lift(g, e.Expr)
		if err != nil {
			return nil, err
		}
		return &planner.InSubquery{Expr: x, Plan: e.Plan, Negated: e.Negated}, b.liftSubquery(g, e.Plan)
	case *planner.QuantifiedSubquery:
		x, err := b.lift(g, e.Expr)
		if err != nil {
			return nil, err
		}
		return &planner.QuantifiedSubquery{Expr: x, Op: e.Op, All: e.All, Plan: e.Plan}, b.liftSubquery(g, e.Plan)
	}
	return e, nil
}

func (b *binder) liftAll(g *grouping, es []planner.Expr) ([]planner.Expr, error) {
	out := make([]planner.Expr, len(es))
	for i, e := range es {
		x, err := b.lift(g, e)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// anyValue is ANY_VALUE(c) computed by the aggregate.
func (b *binder) anyValue(g *grouping, c *planner.ColumnRef) (planner.Expr, error) {
	t, err := resolveAggregateType("any_value", []arrow.DataType{c.T}, false)
	if err != nil {
		return nil, err
	}
	return g.agg.add(b, &planner.AggregateCall{Func: "any_value", Args: []planner.Expr{c}, T: t}), nil
}

// liftSubquery re-points the correlated references of a subquery plan from the aggregate's
// input columns to its output: the group key column when the column is a key, else ANY_VALUE.
func (b *binder) liftSubquery(g *grouping, p planner.Plan) error {
	repl := map[planner.ColumnID]planner.Expr{}
	for id := range planner.FreeColumns(p) {
		if !g.input[id] {
			continue
		}
		var ref planner.Expr
		for i, k := range g.keys {
			if c, ok := k.(*planner.ColumnRef); ok && c.ID == id {
				ref = columnRef(g.columns[i])
			}
		}
		if ref == nil {
			col := findRef(p, id)
			if col == nil {
				continue
			}
			x, err := b.anyValue(g, col)
			if err != nil {
				return err
			}
			ref = x
		}
		repl[id] = ref
	}
	if len(repl) > 0 {
		replacePlanRefs(p, repl)
	}
	return nil
}

// findRef returns a reference to column id found anywhere in p's expressions.
func findRef(p planner.Plan, id planner.ColumnID) *planner.ColumnRef {
	var found *planner.ColumnRef
	walkPlanExprs(p, func(e planner.Expr) planner.Expr {
		if c, ok := e.(*planner.ColumnRef); ok && c.ID == id && found == nil {
			found = c
		}
		return e
	})
	return found
}

// replacePlanRefs replaces, in place, every reference to a column of repl inside p (and the
// subquery plans nested in it).
func replacePlanRefs(p planner.Plan, repl map[planner.ColumnID]planner.Expr) {
	walkPlanExprs(p, func(e planner.Expr) planner.Expr {
		if c, ok := e.(*planner.ColumnRef); ok {
			if r, ok := repl[c.ID]; ok {
				return r
			}
		}
		return e
	})
}

// walkPlanExprs applies f bottom-up to every expression of p, its children and nested subquery
// plans, storing f's results back into the nodes.
func walkPlanExprs(p planner.Plan, f func(planner.Expr) planner.Expr) {
	m := func(e planner.Expr) planner.Expr { return mapExpr(e, f) }
	switch n := p.(type) {
	case *planner.Scan:
		for i := range n.Filters {
			n.Filters[i] = m(n.Filters[i])
		}
	case *planner.Values:
		for _, row := range n.Rows {
			for i := range row {
				row[i] = m(row[i])
			}
		}
	case *planner.Filter:
		n.Cond = m(n.Cond)
	case *planner.Project:
		for i := range n.Exprs {
			n.Exprs[i] = m(n.Exprs[i])
		}
	case *planner.Aggregate:
		for i := range n.GroupBy {
			n.GroupBy[i] = m(n.GroupBy[i])
		}
		for _, a := range n.Aggs {
			for i := range a.Args {
				a.Args[i] = m(a.Args[i])
			}
		}
	case *planner.Join:
		if n.On != nil {
			n.On = m(n.On)
		}
	case *planner.Sort:
		for i := range n.Keys {
			n.Keys[i].Expr = m(n.Keys[i].Expr)
		}
	}
	for _, c := range p.Children() {
		walkPlanExprs(c, f)
	}
}

// mapExpr rebuilds e bottom-up with f applied to every node, descending into subquery plans.
func mapExpr(e planner.Expr, f func(planner.Expr) planner.Expr) planner.Expr {
	switch x := e.(type) {
	case *planner.Call:
		args := make([]planner.Expr, len(x.Args))
		for i, a := range x.Args {
			args[i] = mapExpr(a, f)
		}
		return f(&planner.Call{Func: x.Func, Args: args, T: x.T})
	case *planner.Cast:
		return f(&planner.Cast{Expr: mapExpr(x.Expr, f), To: x.To})
	case *planner.Case:
		out := &planner.Case{T: x.T}
		if x.Operand != nil {
			out.Operand = mapExpr(x.Operand, f)
		}
		for _, w := range x.Whens {
			out.Whens = append(out.Whens, planner.When{Cond: mapExpr(w.Cond, f), Then: mapExpr(w.Then, f)})
		}
		if x.Else != nil {
			out.Else = mapExpr(x.Else, f)
		}
		return f(out)
	case *planner.AggregateCall:
		for i := range x.Args {
			x.Args[i] = mapExpr(x.Args[i], f)
		}
		return f(x)
	case *planner.ScalarSubquery:
		walkPlanExprs(x.Plan, f)
	case *planner.Exists:
		walkPlanExprs(x.Plan, f)
	case *planner.InSubquery:
		walkPlanExprs(x.Plan, f)
		return f(&planner.InSubquery{Expr: mapExpr(x.Expr, f), Plan: x.Plan, Negated: x.Negated})
	case *planner.QuantifiedSubquery:
		walkPlanExprs(x.Plan, f)
		return f(&planner.QuantifiedSubquery{Expr: mapExpr(x.Expr, f), Op: x.Op, All: x.All, Plan: x.Plan})
	}
	return f(e)
}
