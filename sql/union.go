package sql

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// union binds a UNION [ALL | DISTINCT] chain. Inputs of nested unions of the same kind are
// flattened into one node. Column names come from the first input, types are the common type of
// each column across inputs. ORDER BY and LIMIT apply to the whole union; ORDER BY names or
// positions refer to its output columns.
func (b *binder) union(u *sqlparser.Union, outer *scope) (planner.Plan, error) {
	if u.With != nil {
		return nil, errs.Unsupportedf("WITH (common table expressions) is not supported")
	}
	if u.Into != nil {
		return nil, errs.Unsupportedf("UNION … INTO is not supported")
	}
	all := !u.Distinct
	var inputs []planner.Plan
	for _, side := range []sqlparser.TableStatement{u.Left, u.Right} {
		p, err := b.tableStatement(side, outer)
		if err != nil {
			return nil, err
		}
		if nested, ok := p.(*planner.Union); ok && nested.All == all {
			inputs = append(inputs, nested.Inputs...)
		} else {
			inputs = append(inputs, p)
		}
	}
	first := inputs[0].Schema()
	out := &planner.Union{Inputs: inputs, All: all}
	for i, c := range first {
		types := make([]arrow.DataType, len(inputs))
		for j, in := range inputs {
			s := in.Schema()
			if len(s) != len(first) {
				return nil, errs.Invalidf("The used SELECT statements have a different number of columns")
			}
			types[j] = s[i].Type
		}
		t, err := commonType(types...)
		if err != nil {
			return nil, err
		}
		out.Columns = append(out.Columns, planner.Column{ID: b.newID(), Name: c.Name, Type: t, Nullable: true})
	}
	plan, err := b.unionOrderBy(out, u.OrderBy)
	if err != nil {
		return nil, err
	}
	return b.limit(plan, u.Limit)
}

// unionOrderBy sorts a union by positions, output names or expressions over its output columns.
func (b *binder) unionOrderBy(u *planner.Union, order sqlparser.OrderBy) (planner.Plan, error) {
	if len(order) == 0 {
		return u, nil
	}
	sc := newScope(nil)
	sc.add("", u.Columns)
	ctx := &exprContext{scope: sc, clause: "order clause"}
	var keys []planner.SortKey
	for _, o := range order {
		desc := o.Direction == sqlparser.DescOrder
		if n, ok := position(o.Expr); ok {
			if n < 1 || n > len(u.Columns) {
				return nil, errs.NotFoundf("Unknown column '%d' in 'order clause'", n)
			}
			keys = append(keys, planner.SortKey{Expr: columnRef(u.Columns[n-1]), Desc: desc})
			continue
		}
		if c, ok := o.Expr.(*sqlparser.ColName); ok && !c.Qualifier.IsEmpty() {
			return nil, errs.Invalidf("Table '%s' from one of the SELECTs cannot be used in global ORDER clause", c.Qualifier.Name.String())
		}
		if c, ok := o.Expr.(*sqlparser.ColName); ok {
			if j := columnNamed(u.Columns, c.Name.String()); j >= 0 {
				keys = append(keys, planner.SortKey{Expr: columnRef(u.Columns[j]), Desc: desc})
				continue
			}
		}
		x, err := b.expr(o.Expr, ctx)
		if err != nil {
			return nil, err
		}
		keys = append(keys, planner.SortKey{Expr: x, Desc: desc})
	}
	return &planner.Sort{Input: u, Keys: keys}, nil
}

// columnNamed returns the first column called name, -1 if none.
func columnNamed(cols []planner.Column, name string) int {
	for i, c := range cols {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}
