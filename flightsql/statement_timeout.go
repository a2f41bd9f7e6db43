package flightsql

import (
	"context"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// statementContext returns the context one SQL statement plans and runs in: ctx, bounded by
// Options.StatementTimeout when it is set. done releases it; call it when the statement ends.
func (s *Server) statementContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.opts.StatementTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.opts.StatementTimeout)
}

// endHook calls end after the last Release of its reader.
type endHook struct {
	array.RecordReader
	refs atomic.Int64 // extra references taken with Retain
	end  func()
}

func (r *endHook) Retain() {
	r.refs.Add(1)
	r.RecordReader.Retain()
}

func (r *endHook) Release() {
	last := r.refs.Add(-1) < 0
	r.RecordReader.Release()
	if last {
		r.end()
	}
}
