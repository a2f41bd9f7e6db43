package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/errs"
)

// castExpr is CAST(e AS to).
type castExpr struct {
	e  Expr
	to arrow.DataType
}

// NewCast returns CAST(e AS to) with the semantics of CastArray. It returns an InvalidInput error
// when no value of e's type can be converted to `to` (a list to a number, a number to a date, …).
func NewCast(e Expr, to arrow.DataType) (Expr, error) {
	if !canCast(e.DataType(), to) {
		return nil, errs.Invalidf("cannot cast %s of type %s to %s", e, e.DataType(), to)
	}
	return &castExpr{e: e, to: to}, nil
}

func (c *castExpr) DataType() arrow.DataType { return c.to }
func (c *castExpr) String() string           { return fmt.Sprintf("CAST(%s AS %s)", c.e, c.to) }

func (c *castExpr) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	v, err := c.e.Eval(ctx, tc, batch)
	if err != nil {
		return nil, err
	}
	defer v.Release()
	return CastArray(ctx, tc, v, c.to)
}
