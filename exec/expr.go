package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// Expr is a physical scalar expression, evaluated a batch at a time.
//
// Contract: Eval returns an array of exactly batch.NumRows() elements whose type is DataType();
// the caller releases it. Eval never retains batch. SQL NULLs are Arrow nulls. Errors are
// errs-categorized (e.g. an integer overflow is errs.InvalidInput).
type Expr interface {
	DataType() arrow.DataType
	Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error)
	String() string
}
