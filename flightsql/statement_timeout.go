package flightsql

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/stream"
)

// statementContext returns the context one SQL statement plans and runs in: ctx, bounded by
// Options.StatementTimeout when it is set. done releases it; call it when the statement ends.
func (s *Server) statementContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.opts.StatementTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.opts.StatementTimeout)
}

// endWith returns a reader of rdr that calls end once, after its final Release has released
// rdr: the statement's context lives exactly as long as its results are read.
func endWith(rdr array.RecordReader, end func()) array.RecordReader {
	return stream.OnRelease(rdr, end)
}
