package exec

import (
	"context"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Common subexpressions of an aggregate's arguments. TPC-H Q1 sums l_extendedprice * (1 -
// l_discount) and that same product times (1 + l_tax): the product is evaluated once per batch
// and read by both. shareSubexprs rewrites a list of expressions so that every subtree occurring
// more than once (columns and literals aside, which cost nothing) is one sharedExpr, whose value
// is kept for the batch being folded in an evalMemo the evaluating stream carries in its
// context (withEvalMemo); without one, a sharedExpr evaluates its expression every time.

// sharedExpr is an expression whose value is computed once per batch of an evalMemo.
type sharedExpr struct{ inner Expr }

func (e *sharedExpr) DataType() arrow.DataType { return e.inner.DataType() }
func (e *sharedExpr) String() string           { return e.inner.String() }

func (e *sharedExpr) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	m, ok := ctx.Value(evalMemoKey{}).(*evalMemo)
	if !ok || m.batch == nil || m.batch != batch {
		return e.inner.Eval(ctx, tc, batch)
	}
	if v, ok := m.vals[e]; ok {
		v.Retain()
		return v, nil
	}
	v, err := e.inner.Eval(ctx, tc, batch)
	if err != nil {
		return nil, err
	}
	v.Retain()
	m.vals[e] = v
	return v, nil
}

// evalMemo holds the values of sharedExprs for one batch.
type evalMemo struct {
	batch arrow.RecordBatch
	vals  map[*sharedExpr]arrow.Array
}

type evalMemoKey struct{}

// withEvalMemo returns ctx carrying a new memo, and the memo.
func withEvalMemo(ctx context.Context) (context.Context, *evalMemo) {
	m := &evalMemo{vals: map[*sharedExpr]arrow.Array{}}
	return context.WithValue(ctx, evalMemoKey{}, m), m
}

// start makes the memo hold values for batch (until end).
func (m *evalMemo) start(batch arrow.RecordBatch) {
	m.end()
	m.batch = batch
}

// end releases the values held and forgets the batch.
func (m *evalMemo) end() {
	for k, v := range m.vals {
		v.Release()
		delete(m.vals, k)
	}
	m.batch = nil
}

// shareSubexprs returns exprs with their repeated subtrees made sharedExprs (see above); exprs
// is not changed. Only calls (and the arithmetic with a constant they become), over columns and
// literals, are recognized; any other expression is left as it is, inside and out.
func shareSubexprs(exprs []Expr) []Expr {
	counts := map[string]int{}
	var count func(Expr)
	count = func(e Expr) {
		k, ok := cseKey(e)
		if !ok {
			return
		}
		counts[k]++
		if counts[k] > 1 {
			return // a repeat: its subtrees are inside what is shared
		}
		for _, c := range cseChildren(e) {
			count(c)
		}
	}
	for _, e := range exprs {
		count(e)
	}
	shared := map[string]*sharedExpr{}
	var rewrite func(Expr) Expr
	rewrite = func(e Expr) Expr {
		k, ok := cseKey(e)
		if !ok || len(cseChildren(e)) == 0 {
			return e
		}
		if s := shared[k]; s != nil {
			return s
		}
		out := e
		switch n := e.(type) {
		case *callExpr:
			c := *n
			c.args = make([]Expr, len(n.args))
			for i, a := range n.args {
				c.args[i] = rewrite(a)
			}
			out = &c
		case *arithConstExpr:
			c := *n
			c.operand = rewrite(n.operand)
			general := *n.general
			general.args = []Expr{c.operand, c.constant}
			if c.constLeft {
				general.args = []Expr{c.constant, c.operand}
			}
			c.general = &general
			out = &c
		}
		if counts[k] > 1 {
			s := &sharedExpr{inner: out}
			shared[k] = s
			return s
		}
		return out
	}
	res := make([]Expr, len(exprs))
	for i, e := range exprs {
		res[i] = rewrite(e)
	}
	return res
}

// cseKey identifies what e computes: equal keys, equal values. ok is false for an expression
// it does not look into.
func cseKey(e Expr) (string, bool) {
	switch n := e.(type) {
	case *columnExpr:
		return "#" + strconv.Itoa(n.index) + ":" + n.t.String(), true
	case *literalExpr:
		return "lit(" + n.String() + ":" + n.DataType().String() + ")", true
	case *arithConstExpr:
		return cseKey(n.general)
	case *callExpr:
		var b strings.Builder
		b.WriteString(n.name)
		b.WriteString("(")
		for _, a := range n.args {
			k, ok := cseKey(a)
			if !ok {
				return "", false
			}
			b.WriteString(k)
			b.WriteString(",")
		}
		b.WriteString("):")
		b.WriteString(n.t.String())
		return b.String(), true
	}
	return "", false
}

// cseChildren are the subexpressions shareSubexprs looks into.
func cseChildren(e Expr) []Expr {
	switch n := e.(type) {
	case *callExpr:
		return n.args
	case *arithConstExpr:
		return []Expr{n.operand}
	}
	return nil
}
