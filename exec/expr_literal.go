package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/internal/errs"
)

// literalExpr is a constant broadcast to the batch length.
type literalExpr struct{ v scalar.Scalar }

// NewLiteral returns an expression whose value is v on every row; its type is v's type
// (arrow.Null for an untyped NULL).
func NewLiteral(v scalar.Scalar) Expr { return &literalExpr{v: v} }

func (e *literalExpr) DataType() arrow.DataType { return e.v.DataType() }

func (e *literalExpr) String() string {
	if !e.v.IsValid() {
		return "NULL"
	}
	if isStringType(e.v.DataType()) {
		return "'" + strings.ReplaceAll(e.v.String(), "'", "''") + "'"
	}
	return e.v.String()
}

func (e *literalExpr) Eval(_ context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	return BroadcastScalar(tc.Alloc, e.v, int(batch.NumRows()))
}

// paramExpr is a ? placeholder.
type paramExpr struct {
	index int
	t     arrow.DataType
}

// NewParam returns an expression that yields tc.Params[index] on every row, cast to t with CAST
// semantics when its type differs, so that Eval's type is always t (a parameter still typed
// arrow.Null, as in a plan prepared without values, therefore yields NULLs). Eval fails with an
// InvalidInput error when the parameter is missing.
func NewParam(index int, t arrow.DataType) Expr { return &paramExpr{index: index, t: t} }

func (e *paramExpr) DataType() arrow.DataType { return e.t }
func (e *paramExpr) String() string           { return fmt.Sprintf("?%d", e.index+1) }

func (e *paramExpr) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	if e.index < 0 || e.index >= len(tc.Params) || tc.Params[e.index] == nil {
		return nil, errs.Invalidf("parameter %d has no value (%d bound)", e.index+1, len(tc.Params))
	}
	return broadcastAs(ctx, tc, tc.Params[e.index], e.t, int(batch.NumRows()))
}

// broadcastAs broadcasts s to n rows and casts the result to t.
func broadcastAs(ctx context.Context, tc *TaskContext, s scalar.Scalar, t arrow.DataType, n int) (arrow.Array, error) {
	a, err := BroadcastScalar(tc.Alloc, s, n)
	if err != nil {
		return nil, err
	}
	if arrow.TypeEqual(a.DataType(), t) {
		return a, nil
	}
	defer a.Release()
	return CastArray(ctx, tc, a, t)
}
