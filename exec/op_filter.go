package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/stream"
)

// Filter keeps the input rows for which its condition is TRUE (NULL and FALSE drop the row, as
// in SQL WHERE). It never yields empty batches.
type Filter struct {
	input Operator
	cond  Expr
}

// NewFilter returns an operator that keeps the rows of input for which cond is TRUE. cond is
// evaluated against input's schema.
func NewFilter(input Operator, cond Expr) Operator {
	return &Filter{input: input, cond: cond}
}

func (f *Filter) Schema() *arrow.Schema { return f.input.Schema() }
func (f *Filter) Children() []Operator  { return []Operator{f.input} }
func (f *Filter) Partitions() int       { return f.input.Partitions() }
func (f *Filter) String() string        { return fmt.Sprintf("Filter: %s", f.cond) }
func (f *Filter) Condition() Expr       { return f.cond }

func (f *Filter) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	in, err := f.input.Execute(ctx, partition, tc)
	if err != nil {
		return nil, err
	}
	pull := func() (arrow.RecordBatch, error) {
		for {
			b, err := nextNonEmpty(in)
			if b == nil || err != nil {
				return nil, err
			}
			out, err := filterBatch(ctx, tc, b, f.cond)
			b.Release()
			if err != nil {
				return nil, err
			}
			if out != nil {
				return out, nil
			}
		}
	}
	return stream.Pull(ctx, f.Schema(), pull, in.Release), nil
}

// filterBatch returns the rows of batch for which cond is TRUE, or nil when there are none. The
// result is a new reference the caller releases (batch itself, retained, when every row passes).
func filterBatch(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch, cond Expr) (arrow.RecordBatch, error) {
	res, err := cond.Eval(ctx, tc, batch)
	if err != nil {
		return nil, err
	}
	mask, err := PredicateToFilter(ctx, tc, res)
	res.Release()
	if err != nil {
		return nil, err
	}
	defer mask.Release()
	return filterByMask(ctx, tc, batch, mask)
}

// filterByMask returns the rows of batch whose mask entry is true (a NULL entry drops the row),
// or nil when none is. The result is a new reference the caller releases. The kept rows are
// found word by word in the mask's bitmap and gathered once per column (see takeBatchRows).
func filterByMask(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch, mask *array.Boolean) (arrow.RecordBatch, error) {
	if mask.NullN() > 0 {
		clean, err := PredicateToFilter(ctx, tc, mask)
		if err != nil {
			return nil, err
		}
		defer clean.Release()
		mask = clean
	}
	n := mask.Len()
	if int64(n) != batch.NumRows() {
		return nil, errs.Internalf("filter mask has %d rows for a batch of %d", n, batch.NumRows())
	}
	bitmap, offset := maskBitmap(mask)
	kept := 0
	if bitmap != nil {
		kept = bitutil.CountSetBits(bitmap, offset, n)
	}
	switch {
	case kept == 0:
		return nil, nil
	case kept == n:
		batch.Retain()
		return batch, nil
	}
	if runs := selectedRuns(bitmap, offset, n, kept/minRunRows); runs != nil {
		return filterRuns(ctx, tc, batch, runs, kept)
	}
	sel := selectedRows(bitmap, offset, n, make([]int32, 0, kept))
	return takeBatchRows(ctx, tc, batch, sel)
}

// maskBitmap returns the value bits of a boolean array and the bit offset of its first row; nil
// when the array has no value buffer (then it has no TRUE row).
func maskBitmap(mask *array.Boolean) ([]byte, int) {
	buf := mask.Data().Buffers()[1]
	if buf == nil {
		return nil, 0
	}
	return buf.Bytes(), mask.Data().Offset()
}
