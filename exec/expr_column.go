package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/errs"
)

// columnExpr reads one column of the input batch.
type columnExpr struct {
	index int
	name  string
	t     arrow.DataType
}

// NewColumn returns an expression that yields column index of the input batch (retained, not
// copied). String() is name. Eval fails with an Internal error when the batch has no such column
// or its type is not t, since that is a planning bug.
func NewColumn(index int, name string, t arrow.DataType) Expr {
	return &columnExpr{index: index, name: name, t: t}
}

func (e *columnExpr) DataType() arrow.DataType { return e.t }
func (e *columnExpr) String() string           { return e.name }

func (e *columnExpr) Eval(_ context.Context, _ *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	if e.index < 0 || e.index >= int(batch.NumCols()) {
		return nil, errs.Internalf("column %s: index %d outside a batch of %d columns", e.name, e.index, batch.NumCols())
	}
	col := batch.Column(e.index)
	if !arrow.TypeEqual(col.DataType(), e.t) {
		return nil, errs.Internalf("column %s: batch has type %s, plan expects %s", e.name, col.DataType(), e.t)
	}
	col.Retain()
	return col, nil
}

// outerColumnExpr reads a column of an enclosing query's current row.
type outerColumnExpr struct {
	depth, index int
	name         string
	t            arrow.DataType
}

// NewOuterColumn returns an expression that yields, for every row of the batch, the value of
// column index of the outer row depth levels up (1 = tc.Outer, 2 = tc.Outer.Parent, …). Eval
// fails with an Internal error when there is no such outer row or column.
func NewOuterColumn(depth, index int, name string, t arrow.DataType) Expr {
	return &outerColumnExpr{depth: depth, index: index, name: name, t: t}
}

func (e *outerColumnExpr) DataType() arrow.DataType { return e.t }
func (e *outerColumnExpr) String() string           { return fmt.Sprintf("outer(%d).%s", e.depth, e.name) }

func (e *outerColumnExpr) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	row := tc.Outer
	for d := 1; d < e.depth && row != nil; d++ {
		row = row.Parent
	}
	if row == nil || e.depth < 1 {
		return nil, errs.Internalf("outer column %s: no outer row at depth %d", e.name, e.depth)
	}
	if e.index < 0 || e.index >= int(row.Batch.NumCols()) {
		return nil, errs.Internalf("outer column %s: index %d outside a batch of %d columns", e.name, e.index, row.Batch.NumCols())
	}
	s, err := ScalarAt(row.Batch.Column(e.index), row.Row)
	if err != nil {
		return nil, fmt.Errorf("outer column %s: %w", e.name, err)
	}
	return broadcastAs(ctx, tc, s, e.t, int(batch.NumRows()))
}
