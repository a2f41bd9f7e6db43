package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/cachedb/cachedb/internal/errs"
)

// newIndexArray builds an int32 index array for compute.Take.
func newIndexArray(tc *TaskContext, idx []int32) arrow.Array {
	b := array.NewInt32Builder(tc.Alloc)
	defer b.Release()
	b.AppendValues(idx, nil)
	return b.NewArray()
}

// takeRows returns the rows idx of a, in that order.
func takeRows(ctx context.Context, tc *TaskContext, a arrow.Array, idx []int32) (arrow.Array, error) {
	ia := newIndexArray(tc, idx)
	defer ia.Release()
	return takeWith(ctx, tc, a, ia)
}

func takeWith(ctx context.Context, tc *TaskContext, a, indices arrow.Array) (arrow.Array, error) {
	if a.DataType().ID() == arrow.NULL {
		return array.MakeArrayOfNull(tc.Alloc, a.DataType(), indices.Len()), nil
	}
	out, err := compute.TakeArray(computeCtx(ctx, tc), a, indices)
	if err != nil {
		return nil, errs.Internalf("selecting rows of a %s array: %v", a.DataType(), err)
	}
	return out, nil
}
