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
	endWith, err := b.with(u.With)
	if err != nil {
		return nil, err
	}
	defer endWith()
	if u.Into != nil {
		return nil, errs.Unsupportedf("UNION … INTO is not supported")
	}
	all := !u.Distinct
	var inputs []planner.Plan
	for _, side := range unionOperands(u) {
		p, err := b.tableStatement(side, outer)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, p)
	}
	out, err := b.newUnion(inputs, all)
	if err != nil {
		return nil, err
	}
	plan, err := b.setOrderBy(out, out.Columns, u.OrderBy)
	if err != nil {
		return nil, err
	}
	return b.limit(plan, u.Limit)
}

// unionOperands lists the operands of u, left to right, with the nested unions of the same kind
// (ALL or DISTINCT) and without ORDER BY, LIMIT, WITH or INTO flattened into them: vitess
// nests a chain `s1 UNION ALL s2 UNION ALL s3 …` to the left, one level per operand. The walk
// keeps its own stack, so neither the length of the chain nor its nesting costs more than
// linear time or any call depth.
func unionOperands(u *sqlparser.Union) []sqlparser.TableStatement {
	var out []sqlparser.TableStatement
	stack := []sqlparser.TableStatement{u.Right, u.Left}
	for len(stack) > 0 {
		ts := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n, ok := ts.(*sqlparser.Union); ok && n.Distinct == u.Distinct && len(n.OrderBy) == 0 &&
			n.Limit == nil && n.With == nil && n.Into == nil {
			stack = append(stack, n.Right, n.Left)
			continue
		}
		out = append(out, ts)
	}
	return out
}

// newUnion combines inputs column by column: names from the first input, types the common type
// of each column across inputs, fresh column IDs.
func (b *binder) newUnion(inputs []planner.Plan, all bool) (*planner.Union, error) {
	first := inputs[0].Schema()
	out := &planner.Union{Inputs: inputs, All: all}
	schemas := make([]planner.Schema, len(inputs))
	for j, in := range inputs {
		schemas[j] = in.Schema()
		if len(schemas[j]) != len(first) {
			return nil, errs.Invalidf("The used SELECT statements have a different number of columns")
		}
	}
	types := make([]arrow.DataType, len(inputs))
	for i, c := range first {
		for j, s := range schemas {
			types[j] = s[i].Type
		}
		t, err := commonType(types...)
		if err != nil {
			return nil, err
		}
		out.Columns = append(out.Columns, planner.Column{ID: b.newID(), Name: c.Name, Type: t, Nullable: true})
	}
	return out, nil
}

// setOrderBy sorts the result of a set operation (UNION, INTERSECT, EXCEPT), whose output
// columns are cols, by positions, output names or expressions over those columns.
func (b *binder) setOrderBy(in planner.Plan, cols []planner.Column, order sqlparser.OrderBy) (planner.Plan, error) {
	if len(order) == 0 {
		return in, nil
	}
	sc := newScope(nil)
	sc.add("", cols)
	ctx := &exprContext{scope: sc, clause: "order clause"}
	var keys []planner.SortKey
	for _, o := range order {
		desc := o.Direction == sqlparser.DescOrder
		if n, ok := position(o.Expr); ok {
			if n < 1 || n > len(cols) {
				return nil, errs.NotFoundf("Unknown column '%d' in 'order clause'", n)
			}
			keys = append(keys, planner.SortKey{Expr: columnRef(cols[n-1]), Desc: desc})
			continue
		}
		if c, ok := o.Expr.(*sqlparser.ColName); ok && !c.Qualifier.IsEmpty() {
			return nil, errs.Invalidf("Table '%s' from one of the SELECTs cannot be used in global ORDER clause", c.Qualifier.Name.String())
		}
		if c, ok := o.Expr.(*sqlparser.ColName); ok {
			if j := columnNamed(cols, c.Name.String()); j >= 0 {
				keys = append(keys, planner.SortKey{Expr: columnRef(cols[j]), Desc: desc})
				continue
			}
		}
		x, err := b.expr(o.Expr, ctx)
		if err != nil {
			return nil, err
		}
		keys = append(keys, planner.SortKey{Expr: x, Desc: desc})
	}
	return &planner.Sort{Input: in, Keys: keys}, nil
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
