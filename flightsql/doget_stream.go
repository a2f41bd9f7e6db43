package flightsql

import (
	"context"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/flight"
)

// stopOnSendFailure wraps the Flight service so that a DoGet whose send to the client fails
// (the client went away mid-stream) ends cleanly: arrow-go's DoGet returns on a failed write
// without releasing the batch it was writing, so every abandoned stream would keep one batch
// of the query's memory for good. Here a failed send is reported to arrow-go as a success,
// and the call's context is canceled at once, so arrow-go releases that batch, sees the
// context end on its next step and returns; the stream's producer stops with the context. The
// call then ends with the send's own error.
type stopOnSendFailure struct {
	flight.FlightServer
}

func (s stopOnSendFailure) DoGet(ticket *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	guarded := &guardedStream{FlightService_DoGetServer: stream, ctx: ctx, cancel: cancel}
	err := s.FlightServer.DoGet(ticket, guarded)
	if sendErr := guarded.failure(); sendErr != nil {
		return sendErr
	}
	return err
}

type guardedStream struct {
	flight.FlightService_DoGetServer
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu  sync.Mutex
	err error
}

func (g *guardedStream) Context() context.Context { return g.ctx }

func (g *guardedStream) Send(d *flight.FlightData) error {
	if g.failure() != nil {
		return nil
	}
	if err := g.FlightService_DoGetServer.Send(d); err != nil {
		g.mu.Lock()
		g.err = err
		g.mu.Unlock()
		g.cancel(err)
	}
	return nil
}

func (g *guardedStream) failure() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}
