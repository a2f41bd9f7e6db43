package exec

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// pullStream adapts a pull function to array.RecordReader. It is the per-partition stream behind
// the scan, filter, project, values, join, union, repartition and coalesce operators.
//
// Contract: pull returns the next batch, owned by the stream (nil, nil at the end). The stream
// checks ctx before every pull, so a canceled query ends with ctx.Err(). closeFn, if set, runs
// exactly once: when the stream ends (by exhaustion or error) or when the last reference is
// released, whichever comes first, so upstream readers are released as early as possible.
type pullStream struct {
	refs    atomic.Int64
	ctx     context.Context
	schema  *arrow.Schema
	pull    func() (arrow.RecordBatch, error)
	closeFn func()
	once    sync.Once
	cur     arrow.RecordBatch
	err     error
	done    bool
}

var _ array.RecordReader = (*pullStream)(nil)

func newPullStream(ctx context.Context, schema *arrow.Schema, pull func() (arrow.RecordBatch, error), closeFn func()) *pullStream {
	s := &pullStream{ctx: ctx, schema: schema, pull: pull, closeFn: closeFn}
	s.refs.Store(1)
	return s
}

func (s *pullStream) Retain() { s.refs.Add(1) }

func (s *pullStream) Release() {
	if s.refs.Add(-1) != 0 {
		return
	}
	s.releaseCurrent()
	s.close()
}

func (s *pullStream) close() {
	s.once.Do(func() {
		if s.closeFn != nil {
			s.closeFn()
		}
	})
}

func (s *pullStream) releaseCurrent() {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
}

func (s *pullStream) Schema() *arrow.Schema { return s.schema }

func (s *pullStream) Next() bool {
	s.releaseCurrent()
	if s.done {
		return false
	}
	if err := s.ctx.Err(); err != nil {
		s.finish(err)
		return false
	}
	b, err := s.pull()
	if err != nil || b == nil {
		if b != nil {
			b.Release()
		}
		s.finish(err)
		return false
	}
	s.cur = b
	return true
}

func (s *pullStream) finish(err error) {
	s.done = true
	s.err = err
	s.close()
}

func (s *pullStream) RecordBatch() arrow.RecordBatch { return s.cur }

// Record is the deprecated name of RecordBatch.
func (s *pullStream) Record() arrow.RecordBatch { return s.cur }

func (s *pullStream) Err() error { return s.err }

// nextNonEmpty reads rdr until a batch with rows appears; it returns that batch retained (the
// caller releases it), or nil at the end of the stream with rdr's error.
func nextNonEmpty(rdr array.RecordReader) (arrow.RecordBatch, error) {
	for rdr.Next() {
		b := rdr.RecordBatch()
		if b.NumRows() > 0 {
			b.Retain()
			return b, nil
		}
	}
	return nil, rdr.Err()
}

// emptyStream returns a reader with no batches.
func emptyStream(ctx context.Context, schema *arrow.Schema) array.RecordReader {
	return newPullStream(ctx, schema, func() (arrow.RecordBatch, error) { return nil, nil }, nil)
}
