package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Q1's arguments share the discounted price: shared once, evaluated once per batch with a memo,
// each expression giving the value it gives alone; columns of one name but different positions
// are not taken for each other.
func TestShareSubexprs(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d := dec(15, 2)
	call := func(op string, args ...Expr) Expr {
		e, err := NewCall(op, args)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	price, disc, tax := NewColumn(0, "x", d), NewColumn(1, "x", d), NewColumn(2, "t", d)
	discounted := call("*", price, call("-", lit(int64(1)), disc))
	exprs := []Expr{
		discounted,
		call("*", call("*", price, call("-", lit(int64(1)), disc)), call("+", lit(int64(1)), tax)),
		call("*", disc, call("-", lit(int64(1)), price)), // same shape over other positions
		price,
	}
	shared := shareSubexprs(exprs)
	s0, ok := shared[0].(*sharedExpr)
	if !ok {
		t.Fatalf("the discounted price is %T, want shared", shared[0])
	}
	if outer, ok := shared[1].(*callExpr); !ok || outer.args[0] != s0 {
		t.Fatalf("the charge does not read the shared discounted price: %#v", shared[1])
	}
	if _, ok := shared[2].(*sharedExpr); ok {
		t.Fatal("disc * (1 - price) was taken for price * (1 - disc)")
	}
	if shared[3] != price {
		t.Fatal("a column was wrapped")
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: d}, {Name: "x", Type: d}, {Name: "t", Type: d}}, nil)
	cols := []arrow.Array{arr(t, mem, d, `["10.00", "2.50", null]`), arr(t, mem, d, `["0.10", "0.05", "0.01"]`), arr(t, mem, d, `["0.08", null, "0.02"]`)}
	batch := array.NewRecordBatch(schema, cols, 3)
	releaseArrays(cols)
	defer batch.Release()
	ctx, memo := withEvalMemo(context.Background())
	tc := &TaskContext{Alloc: mem}
	for round := range 2 {
		memo.start(batch)
		for i, e := range shared {
			got, err := e.Eval(ctx, tc, batch)
			if err != nil {
				t.Fatal(err)
			}
			want, err := exprs[i].Eval(context.Background(), tc, batch)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := renderArray(got), renderArray(want); g != w {
				t.Errorf("round %d, expression %d: %s, alone %s", round, i, g, w)
			}
			got.Release()
			want.Release()
		}
		if len(memo.vals) != 1 {
			t.Errorf("the memo holds %d values, want the one shared", len(memo.vals))
		}
		memo.end()
	}
}
