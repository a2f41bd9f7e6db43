// Package stream is the one array.RecordReader implementation that cachedb's own readers share,
// so that every stream follows the same reference-counting contract:
//
//   - A reader starts with one reference. Retain adds one; Release drops one. Retain and
//     Release may be called from any goroutine; Next, RecordBatch and Err belong to the
//     goroutine that reads.
//   - The Release that drops the count to zero releases the current batch and makes sure the
//     reader's close callback has run. The callback runs exactly once in the reader's life: when
//     the stream ends (its source is exhausted or fails, or its context ends) or at that final
//     Release, whichever comes first, so what the stream holds upstream is freed as early as
//     possible, also when the stream was never read or ended with an error. Releases beyond the
//     last do nothing.
//   - Next after the end, after an error or after the final Release returns false.
//   - RecordBatch (and its deprecated name Record) is valid until the next call to Next or the
//     final Release; a caller that keeps a batch longer retains it.
//   - Err reports the first error the stream met, nil at a normal end.
//
// Pull builds a reader from a pull function; OnRelease and OnReleaseDrained wrap any reader
// with a hook that runs once, after its final Release.
package stream

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// Reader is a stream of batches pulled from a function. See the package comment for its
// contract.
type Reader struct {
	refs    atomic.Int64
	ctx     context.Context
	schema  *arrow.Schema
	next    func() (arrow.RecordBatch, error)
	onClose func()
	closed  sync.Once
	cur     arrow.RecordBatch
	err     error
	done    bool
}

var _ array.RecordReader = (*Reader)(nil)

// Pull returns a reader of schema whose batches come from next. next returns the next batch,
// owned by the reader from then on, or nil and nil at the end, or an error (a batch returned
// with an error is released). next is not called again once it has returned nil or an error.
// Before each call the reader checks ctx: once ctx has ended the stream ends with Stopped(ctx).
// An error next returns after ctx has ended is reported as Stopped(ctx) too: work cut short by
// the end of its context (an Arrow kernel's "context deadline exceeded", wrapped as whatever
// the operator that called it wraps errors as) reports why it was stopped, the same way
// whichever operator it went through.
// onClose (nil for none) runs exactly once, as the package comment says; it must release
// whatever next draws from.
func Pull(ctx context.Context, schema *arrow.Schema, next func() (arrow.RecordBatch, error), onClose func()) *Reader {
	r := &Reader{ctx: ctx, schema: schema, next: next, onClose: onClose}
	r.refs.Store(1)
	return r
}

// Empty returns a reader of schema with no batches.
func Empty(schema *arrow.Schema) *Reader {
	return Pull(context.Background(), schema, func() (arrow.RecordBatch, error) { return nil, nil }, nil)
}

// Retain adds a reference.
func (r *Reader) Retain() { r.refs.Add(1) }

// Release drops a reference; the final one releases the current batch and closes the stream.
func (r *Reader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	r.releaseCurrent()
	r.done = true
	r.close()
}

// Schema is the schema of every batch.
func (r *Reader) Schema() *arrow.Schema { return r.schema }

// Next moves to the next batch, releasing the previous one; it reports false at the end of the
// stream or on an error (see Err).
func (r *Reader) Next() bool {
	r.releaseCurrent()
	if r.done {
		return false
	}
	if err := Stopped(r.ctx); err != nil {
		r.finish(err)
		return false
	}
	b, err := r.next()
	if err != nil || b == nil {
		if b != nil {
			b.Release()
		}
		if stop := Stopped(r.ctx); err != nil && stop != nil {
			err = stop
		}
		r.finish(err)
		return false
	}
	r.cur = b
	return true
}

// RecordBatch is the current batch, valid until the next Next or the final Release.
func (r *Reader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the deprecated name of RecordBatch.
func (r *Reader) Record() arrow.RecordBatch { return r.cur }

// Err is the first error the stream met, nil while it runs and at a normal end.
func (r *Reader) Err() error { return r.err }

// finish ends the stream with err (nil at a normal end) and runs onClose.
func (r *Reader) finish(err error) {
	if r.err == nil {
		r.err = err
	}
	r.done = true
	r.close()
}

func (r *Reader) close() {
	r.closed.Do(func() {
		if r.onClose != nil {
			r.onClose()
		}
	})
}

func (r *Reader) releaseCurrent() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

// Stopped is the error of a stream whose context ended, nil while ctx runs: the cause ctx was
// canceled with when one was given (a stage that failed says why), else an errs.Canceled error
// wrapping the context error, so errors.Is still tells context.Canceled from
// context.DeadlineExceeded.
func Stopped(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	var categorized *errs.Error
	if errors.As(cause, &categorized) || !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return cause
	}
	msg := "query canceled"
	if errors.Is(cause, context.DeadlineExceeded) {
		msg = "query timed out"
	}
	return &errs.Error{Category: errs.Canceled, Msg: msg, Err: cause}
}
