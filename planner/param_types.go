package planner

import "github.com/apache/arrow-go/v18/arrow"

// siblingTyped are the functions whose ? operands take the type of another operand, as MySQL
// types a parameter from the operand it meets: `col = ?` the column's type, `? + 1` a number.
var siblingTyped = map[string]bool{
	"=": true, "<>": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true, "<=>": true,
	"between": true, "in": true, "+": true, "-": true, "*": true, "/": true, "div": true,
	"%": true, "mod": true, "coalesce": true, "ifnull": true, "nullif": true, "if": true,
	"greatest": true, "least": true,
}

// textTyped are the functions whose ? operands are strings whatever the other operand is.
var textTyped = map[string]bool{"like": true, "regexp": true, "concat": true}

// InferParamTypes returns a type for each of a statement's n ? placeholders, read from the
// context each one is used in within the bound statement (bound with untyped placeholders):
// an operand of a comparison, arithmetic or IN takes its other operand's type, a LIKE pattern
// is a string, an INSERT value takes its column's type, a CAST operand the target type, a
// CASE branch the CASE's type. hints (may be nil) give types the binder knew from syntax that
// the plan no longer shows (a LIMIT operand). A placeholder that no context types is utf8,
// MySQL's own choice for an untyped parameter. The first context seen wins.
func InferParamTypes(st Statement, n int, hints map[int]arrow.DataType) []arrow.DataType {
	out := make([]arrow.DataType, n)
	set := func(e Expr, t arrow.DataType) {
		p, ok := e.(*Param)
		if !ok || t == nil || t.ID() == arrow.NULL || p.Index >= n || out[p.Index] != nil {
			return
		}
		out[p.Index] = t
	}
	for i, t := range hints {
		if i < n {
			out[i] = t
		}
	}
	for _, p := range statementPlans(st) {
		inferPlan(p, set)
	}
	for i := range out {
		if out[i] == nil {
			out[i] = arrow.BinaryTypes.String
		}
	}
	return out
}

// statementPlans lists the plans a statement evaluates.
func statementPlans(st Statement) []Plan {
	switch s := st.(type) {
	case *Query:
		return []Plan{s.Plan}
	case *Explain:
		return []Plan{s.Query.Plan}
	case *Insert:
		return []Plan{s.Source.Plan}
	case *CreateTable:
		if s.AsSelect != nil {
			return []Plan{s.AsSelect.Plan}
		}
	case *Update:
		return []Plan{s.NewContents.Plan, s.Matched.Plan}
	case *Delete:
		return []Plan{s.Keep.Plan, s.Deleted.Plan}
	}
	return nil
}

// inferPlan visits every expression of p and of its inputs and subqueries.
func inferPlan(p Plan, set func(Expr, arrow.DataType)) {
	if p == nil {
		return
	}
	if v, ok := p.(*Values); ok {
		for _, row := range v.Rows {
			for i, e := range row {
				if i < len(v.Columns) {
					set(e, v.Columns[i].Type)
				}
			}
		}
	}
	for _, e := range PlanExprs(p) {
		walkExpr(e, func(x Expr) { inferExpr(x, set) })
	}
	for _, c := range p.Children() {
		inferPlan(c, set)
	}
}

// inferExpr types the placeholders among x's direct operands and enters x's subqueries.
func inferExpr(x Expr, set func(Expr, arrow.DataType)) {
	switch x := x.(type) {
	case *Call:
		if textTyped[x.Func] {
			for _, a := range x.Args {
				set(a, arrow.BinaryTypes.String)
			}
		}
		if siblingTyped[x.Func] {
			if t := firstTyped(x.Args...); t != nil {
				for _, a := range x.Args {
					set(a, t)
				}
			}
		}
	case *Cast:
		set(x.Expr, x.To)
	case *Case:
		branches := []Expr{x.Else}
		for _, w := range x.Whens {
			branches = append(branches, w.Then)
		}
		t := x.T
		if t == nil || t.ID() == arrow.NULL {
			t = firstTyped(branches...)
		}
		for _, b := range branches {
			set(b, t)
		}
		if x.Operand != nil {
			conds := []Expr{x.Operand}
			for _, w := range x.Whens {
				conds = append(conds, w.Cond)
			}
			if t := firstTyped(conds...); t != nil {
				for _, c := range conds {
					set(c, t)
				}
			}
		}
	case *ScalarSubquery:
		inferPlan(x.Plan, set)
	case *Exists:
		inferPlan(x.Plan, set)
	case *InSubquery:
		if s := x.Plan.Schema(); len(s) > 0 {
			set(x.Expr, s[0].Type)
		}
		inferPlan(x.Plan, set)
	case *QuantifiedSubquery:
		if s := x.Plan.Schema(); len(s) > 0 {
			set(x.Expr, s[0].Type)
		}
		inferPlan(x.Plan, set)
	}
}

// firstTyped returns the type of the first expression that is no placeholder and has a type
// other than NULL, or nil.
func firstTyped(es ...Expr) arrow.DataType {
	for _, e := range es {
		if e == nil {
			continue
		}
		if _, ok := e.(*Param); ok {
			continue
		}
		if t := e.Type(); t != nil && t.ID() != arrow.NULL {
			return t
		}
	}
	return nil
}

// NumParams returns the number of ? placeholders of a bound statement.
func NumParams(st Statement) int {
	switch s := st.(type) {
	case *Query:
		return s.NumParams
	case *Explain:
		return s.Query.NumParams
	case *Insert:
		return s.Source.NumParams
	case *CreateTable:
		if s.AsSelect != nil {
			return s.AsSelect.NumParams
		}
	case *Update:
		return max(s.NewContents.NumParams, s.Matched.NumParams)
	case *Delete:
		return max(s.Keep.NumParams, s.Deleted.NumParams)
	}
	return 0
}
