package flightsql

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/stream"
)

// statementContext returns the context one SQL statement plans and runs in: ctx, bounded by
// its statement timeout (statementTimeout). done releases it; call it when the statement ends.
func (s *Server) statementContext(ctx context.Context) (context.Context, context.CancelFunc) {
	timeout := s.statementTimeout(engine.SessionFrom(ctx))
	if timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, timeout)
}

// statementTimeout is what bounds a statement of session: the session's own statement timeout
// (session option statement_timeout, SET max_execution_time) when it sets one, else the
// server's (Options.StatementTimeout); the server's is also the upper bound, so a session can
// shorten it but never lengthen it. 0: no bound.
func (s *Server) statementTimeout(session engine.Session) time.Duration {
	server, own := s.opts.StatementTimeout, session.StatementTimeout
	switch {
	case own <= 0:
		return max(server, 0)
	case server <= 0:
		return own
	default:
		return min(own, server)
	}
}

// endWith returns a reader of rdr that calls end once, after its final Release has released
// rdr: the statement's context lives exactly as long as its results are read.
func endWith(rdr array.RecordReader, end func()) array.RecordReader {
	return stream.OnRelease(rdr, end)
}
