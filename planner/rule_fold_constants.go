package planner

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/exec"
)

// FoldConstants evaluates, once at planning time, every function call and cast whose inputs
// are all literals, using the same kernels that would run per batch. A call that fails (an
// overflow, say) is left in place so the error surfaces when — and only if — the query
// evaluates it, as MySQL does.
type FoldConstants struct{}

func (FoldConstants) Name() string { return "fold_constants" }

func (FoldConstants) Rewrite(p Plan) (Plan, bool) {
	changed := false
	out, _ := transformUp(p, func(n Plan) (Plan, bool) {
		return mapNodeExprs(n, func(e Expr) Expr {
			f, c := foldExpr(e)
			changed = changed || c
			return f
		}), false
	})
	return out, changed
}

// foldExpr folds e bottom-up.
func foldExpr(e Expr) (Expr, bool) {
	switch e := e.(type) {
	case *Call:
		c := *e
		c.Args = make([]Expr, len(e.Args))
		changed := false
		allLiteral := true
		for i, a := range e.Args {
			f, ch := foldExpr(a)
			c.Args[i] = f
			changed = changed || ch
			if _, ok := f.(*Literal); !ok {
				allLiteral = false
			}
		}
		if allLiteral {
			if l, ok := evalConstant(&c); ok {
				return l, true
			}
		}
		if !changed {
			return e, false
		}
		return &c, true
	case *Cast:
		inner, changed := foldExpr(e.Expr)
		c := &Cast{Expr: inner, To: e.To}
		if _, ok := inner.(*Literal); ok {
			if l, ok := evalConstant(c); ok {
				return l, true
			}
		}
		if !changed {
			return e, false
		}
		return c, true
	case *Case:
		c := *e
		changed := false
		fold := func(x Expr) Expr {
			if x == nil {
				return nil
			}
			f, ch := foldExpr(x)
			changed = changed || ch
			return f
		}
		c.Operand = fold(e.Operand)
		c.Whens = make([]When, len(e.Whens))
		for i, w := range e.Whens {
			c.Whens[i] = When{Cond: fold(w.Cond), Then: fold(w.Then)}
		}
		c.Else = fold(e.Else)
		if !changed {
			return e, false
		}
		return &c, true
	case *AggregateCall:
		c := *e
		c.Args = make([]Expr, len(e.Args))
		changed := false
		for i, a := range e.Args {
			f, ch := foldExpr(a)
			c.Args[i] = f
			changed = changed || ch
		}
		if !changed {
			return e, false
		}
		return &c, true
	}
	return e, false
}

// evalConstant evaluates an expression over literals on a one-row batch without columns.
func evalConstant(e Expr) (*Literal, bool) {
	pp := &physicalPlanner{}
	x, err := pp.expr(e, nil)
	if err != nil {
		return nil, false
	}
	mem := memory.DefaultAllocator
	batch := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer batch.Release()
	arr, err := x.Eval(context.Background(), &exec.TaskContext{Alloc: mem}, batch)
	if err != nil {
		return nil, false
	}
	defer arr.Release()
	s, err := exec.ScalarAt(arr, 0)
	if err != nil || !arrow.TypeEqual(s.DataType(), e.Type()) {
		return nil, false
	}
	return &Literal{Value: s}, true
}
