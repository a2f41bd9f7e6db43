package planner

import (
	"context"
	"errors"
	"testing"
)

// exprDepth is the depth of an expression tree (1 for a leaf).
func exprDepth(e Expr) int {
	c, ok := e.(*Call)
	if !ok {
		return 1
	}
	d := 0
	for _, a := range c.Args {
		d = max(d, exprDepth(a))
	}
	return d + 1
}

// TestAndOfManyConditionsIsShallowAndSplitsBack: and() of 100,000 conditions is about log2 deep,
// and conjuncts lists them back in order; a short conjunction keeps the left-nested shape.
func TestAndOfManyConditionsIsShallowAndSplitsBack(t *testing.T) {
	b := newPlanBuilder(t)
	a := col(b.scan("t1").Columns[0])
	conds := make([]Expr, 100_000)
	for i := range conds {
		conds[i] = cmp("=", a, lit(int64(i)))
	}
	all := and(conds...)
	if d := exprDepth(all); d > 64+20 {
		t.Errorf("and of %d conditions is %d deep", len(conds), d)
	}
	back := conjuncts(all)
	if len(back) != len(conds) {
		t.Fatalf("conjuncts: %d conditions, want %d", len(back), len(conds))
	}
	for i := range back {
		if back[i] != conds[i] {
			t.Fatalf("conjunct %d is %s, want %s", i, back[i], conds[i])
		}
	}
	if got, want := and(conds[:3]...).String(), "(("+conds[0].String()+" and "+conds[1].String()+") and "+conds[2].String()+")"; got != want {
		t.Errorf("and of three = %s, want %s", got, want)
	}
}

// TestChainOfADeepTree lists the operands of a right-nested OR chain 100,000 deep without
// recursion, in order.
func TestChainOfADeepTree(t *testing.T) {
	b := newPlanBuilder(t)
	a := col(b.scan("t1").Columns[0])
	var e Expr = cmp("=", a, lit(0))
	const n = 100_000
	for i := 1; i < n; i++ {
		e = cmp("or", cmp("=", a, lit(int64(i))), e) // (= n-1) or (… or ((= 1) or (= 0)))
	}
	ops := chain(e, "or")
	if len(ops) != n {
		t.Fatalf("%d operands, want %d", len(ops), n)
	}
	if ops[0].String() != cmp("=", a, lit(n-1)).String() || ops[n-1].String() != cmp("=", a, lit(0)).String() {
		t.Errorf("operands out of order: first %s, last %s", ops[0], ops[n-1])
	}
}

// TestOptimizeContextStopsWhenCanceled: an ended context ends optimization with its error.
func TestOptimizeContextStopsWhenCanceled(t *testing.T) {
	b := newPlanBuilder(t)
	t1 := b.scan("t1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := OptimizeContext(ctx, &Filter{Input: t1, Cond: cmp(">", col(t1.Columns[0]), lit(1))}); !errors.Is(err, context.Canceled) {
		t.Errorf("OptimizeContext with a canceled context: %v, want context.Canceled", err)
	}
}
