package planner

import (
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
)

func (pp *physicalPlanner) exprs(es []Expr, in Schema) ([]exec.Expr, error) {
	out := make([]exec.Expr, len(es))
	for i, e := range es {
		x, err := pp.expr(e, in)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// expr compiles e for evaluation over batches whose columns are in.
func (pp *physicalPlanner) expr(e Expr, in Schema) (exec.Expr, error) {
	switch e := e.(type) {
	case *ColumnRef:
		if i := in.IndexOf(e.ID); i >= 0 {
			return exec.NewColumn(i, e.Name, in[i].Type), nil
		}
		for depth := 1; depth <= len(pp.outer); depth++ {
			s := pp.outer[len(pp.outer)-depth]
			if i := s.IndexOf(e.ID); i >= 0 {
				return exec.NewOuterColumn(depth, i, e.Name, s[i].Type), nil
			}
		}
		return nil, errs.Internalf("column %s is not available here", e)
	case *Literal:
		return exec.NewLiteral(e.Value), nil
	case *Param:
		return exec.NewParam(e.Index, e.T), nil
	case *Call:
		args, err := pp.exprs(e.Args, in)
		if err != nil {
			return nil, err
		}
		return exec.NewCall(e.Func, args)
	case *Cast:
		x, err := pp.expr(e.Expr, in)
		if err != nil {
			return nil, err
		}
		return exec.NewCast(x, e.To)
	case *Case:
		var operand, els exec.Expr
		var err error
		if e.Operand != nil {
			if operand, err = pp.expr(e.Operand, in); err != nil {
				return nil, err
			}
		}
		whens := make([][2]exec.Expr, len(e.Whens))
		for i, w := range e.Whens {
			if whens[i][0], err = pp.expr(w.Cond, in); err != nil {
				return nil, err
			}
			if whens[i][1], err = pp.expr(w.Then, in); err != nil {
				return nil, err
			}
		}
		if e.Else != nil {
			if els, err = pp.expr(e.Else, in); err != nil {
				return nil, err
			}
		}
		return exec.NewCase(operand, whens, els, e.T)
	case *ScalarSubquery:
		op, correlated, err := pp.subquery(e.Plan, in)
		if err != nil {
			return nil, err
		}
		return exec.NewScalarSubquery(op, correlated), nil
	case *Exists:
		op, correlated, err := pp.subquery(e.Plan, in)
		if err != nil {
			return nil, err
		}
		return exec.NewExists(op, e.Negated, correlated), nil
	case *InSubquery:
		needle, err := pp.expr(e.Expr, in)
		if err != nil {
			return nil, err
		}
		op, correlated, err := pp.subquery(e.Plan, in)
		if err != nil {
			return nil, err
		}
		return exec.NewInSubquery(needle, op, e.Negated, correlated), nil
	case *QuantifiedSubquery:
		needle, err := pp.expr(e.Expr, in)
		if err != nil {
			return nil, err
		}
		op, correlated, err := pp.subquery(e.Plan, in)
		if err != nil {
			return nil, err
		}
		return exec.NewQuantifiedSubquery(needle, e.Op, e.All, op, correlated)
	case *AggregateCall:
		return nil, errs.Internalf("aggregate %s outside an aggregation", e)
	}
	return nil, errs.Internalf("no physical expression for %T", e)
}

// subquery plans a subquery evaluated over rows of in. It is correlated when it reads columns
// it does not produce; those resolve against in and the schemas enclosing it.
func (pp *physicalPlanner) subquery(p Plan, in Schema) (exec.Operator, bool, error) {
	correlated := len(FreeColumns(p)) > 0
	pp.outer = append(pp.outer, in)
	defer func() { pp.outer = pp.outer[:len(pp.outer)-1] }()
	op, err := pp.plan(p)
	if err != nil {
		return nil, false, err
	}
	return pp.single(op), correlated, nil
}
