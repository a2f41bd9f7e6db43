package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// betweenConstExpr is `column BETWEEN lo AND hi` with non-NULL literal bounds, in a type the
// bit kernels compare (compareConstExpr): `column >= lo` and `column <= hi`, each a bit
// kernel, ANDed bitmap by bitmap, instead of the general kernel's comparison of row after row.
// Both comparisons are NULL exactly where the column is, so the AND of their bitmaps is the
// three-valued AND.
type betweenConstExpr struct {
	general *callExpr
	lo, hi  *compareConstExpr
}

// newBetweenConst returns the specialized form of call when call is BETWEEN of a column and two
// non-NULL literals whose comparisons the bit kernels make in BETWEEN's own comparison type,
// and nil otherwise. (The operand must be a column: each comparison evaluates it.)
func newBetweenConst(call *callExpr) Expr {
	if call.name != "between" || len(call.args) != 3 {
		return nil
	}
	if _, ok := call.args[0].(*columnExpr); !ok {
		return nil
	}
	types := []arrow.DataType{call.args[0].DataType(), call.args[1].DataType(), call.args[2].DataType()}
	t, err := comparisonType("BETWEEN", types)
	if err != nil {
		return nil
	}
	half := func(op string, bound Expr) *compareConstExpr {
		k, rt, err := ResolveScalar(op, []arrow.DataType{types[0], bound.DataType()})
		if err != nil {
			return nil
		}
		c, ok := newCompareConst(&callExpr{name: op, args: []Expr{call.args[0], bound}, kernel: k, t: rt}).(*compareConstExpr)
		if !ok || !arrow.TypeEqual(c.cmpType, t) {
			return nil
		}
		return c
	}
	lo, hi := half(">=", call.args[1]), half("<=", call.args[2])
	if lo == nil || hi == nil {
		return nil
	}
	return &betweenConstExpr{general: call, lo: lo, hi: hi}
}

func (e *betweenConstExpr) DataType() arrow.DataType { return e.general.DataType() }
func (e *betweenConstExpr) String() string           { return e.general.String() }

func (e *betweenConstExpr) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	lo, err := e.lo.Eval(ctx, tc, batch)
	if err != nil {
		return nil, err
	}
	defer lo.Release()
	hi, err := e.hi.Eval(ctx, tc, batch)
	if err != nil {
		return nil, err
	}
	defer hi.Release()
	a, aok := lo.(*array.Boolean)
	b, bok := hi.(*array.Boolean)
	if !aok || !bok || a.Len() != b.Len() {
		return e.general.Eval(ctx, tc, batch)
	}
	if out := andBooleans(tc.Alloc, a, b); out != nil {
		return out, nil
	}
	return e.general.Eval(ctx, tc, batch)
}

// andBooleans returns a AND b row by row, valid where both are (for operands NULL in the same
// rows, the three-valued AND); nil when either has no value bitmap.
func andBooleans(mem memory.Allocator, a, b *array.Boolean) arrow.Array {
	n := a.Len()
	if a.NullN() == n || b.NullN() == n {
		return array.MakeArrayOfNull(mem, arrow.FixedWidthTypes.Boolean, n)
	}
	av, aoff := maskBitmap(a)
	bv, boff := maskBitmap(b)
	if av == nil || bv == nil {
		return nil
	}
	values := bitutil.BitmapAndAlloc(mem, av, bv, int64(aoff), int64(boff), int64(n), 0)
	defer values.Release()
	valid, nulls := andValidity(mem, n, []arrow.Array{a, b})
	if valid != nil {
		defer valid.Release()
	}
	data := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{valid, values}, nil, nulls, 0)
	defer data.Release()
	return array.NewBooleanData(data)
}
