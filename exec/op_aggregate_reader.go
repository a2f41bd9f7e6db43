package exec

import (
	"context"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/errs"
)

// batchFuncReader is the array.RecordReader behind the aggregate, sort and limit streams: it
// pulls batches from a produce function, checks ctx before each one and turns cancellation into
// an errs.Canceled error wrapping ctx.Err().
//
// produce returns the next batch (ownership passes to the reader), or nil and nil at the end.
// cleanup runs once, at the end of the stream, on error, or on the last Release, whichever comes
// first, and must release everything the stream holds.
type batchFuncReader struct {
	refs    atomic.Int64
	ctx     context.Context
	schema  *arrow.Schema
	produce func() (arrow.RecordBatch, error)
	cleanup func()
	cur     arrow.RecordBatch
	err     error
	done    bool
}

func newBatchFuncReader(ctx context.Context, schema *arrow.Schema, produce func() (arrow.RecordBatch, error), cleanup func()) *batchFuncReader {
	r := &batchFuncReader{ctx: ctx, schema: schema, produce: produce, cleanup: cleanup}
	r.refs.Store(1)
	return r
}

func (r *batchFuncReader) Retain() { r.refs.Add(1) }

func (r *batchFuncReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	r.releaseCurrent()
	r.finish(nil)
}

func (r *batchFuncReader) Schema() *arrow.Schema { return r.schema }

func (r *batchFuncReader) Next() bool {
	r.releaseCurrent()
	if r.done {
		return false
	}
	if err := r.ctx.Err(); err != nil {
		r.finish(aggCanceled(err))
		return false
	}
	batch, err := r.produce()
	if err != nil || batch == nil {
		r.finish(err)
		return false
	}
	r.cur = batch
	return true
}

func (r *batchFuncReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the deprecated name of RecordBatch.
func (r *batchFuncReader) Record() arrow.RecordBatch { return r.cur }

func (r *batchFuncReader) Err() error { return r.err }

func (r *batchFuncReader) releaseCurrent() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

// finish ends the stream with err (nil at a normal end) and frees its resources once.
func (r *batchFuncReader) finish(err error) {
	if r.err == nil {
		r.err = err
	}
	if r.done {
		return
	}
	r.done = true
	if r.cleanup != nil {
		r.cleanup()
	}
}

// aggCanceled wraps a context error as an errs.Canceled error.
func aggCanceled(err error) error {
	return &errs.Error{Category: errs.Canceled, Msg: "query canceled", Err: err}
}
