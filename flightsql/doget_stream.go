package flightsql

import (
	"context"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/cachedb/cachedb/internal/flightwire"
)

// resultStreams wraps the Flight SQL service so that query results (the tickets of statements
// and prepared statements) are sent by flightwire, one copy of their bytes; the other tickets
// (catalog metadata, small) are arrow-go's to answer, behind stopOnSendFailure.
type resultStreams struct {
	flight.FlightServer
	s *Server
}

func (r resultStreams) DoGet(ticket *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	var (
		command anypb.Any
		open    func(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error)
	)
	if proto.Unmarshal(ticket.GetTicket(), &command) == nil {
		if cmd, err := command.UnmarshalNew(); err == nil {
			switch cmd := cmd.(type) {
			case *pb.TicketStatementQuery:
				open = func(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
					return r.s.DoGetStatement(ctx, cmd)
				}
			case *pb.CommandPreparedStatementQuery:
				open = func(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
					return r.s.DoGetPreparedStatement(ctx, cmd)
				}
			}
		}
	}
	if open == nil {
		return stopOnSendFailure{r.FlightServer}.DoGet(ticket, stream)
	}
	return sendChunks(stream, open)
}

// sendChunks opens a result and sends its chunks until they end, one of them carries an error,
// or a send fails (the client went away). On every return the producer is stopped (the context
// it was opened with is canceled) and every chunk it still sends is released.
func sendChunks(stream flight.FlightService_DoGetServer, open func(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error)) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	schema, chunks, err := open(ctx)
	if err != nil {
		return err
	}
	defer func() {
		cancel()
		for chunk := range chunks {
			if chunk.Data != nil {
				chunk.Data.Release()
			}
		}
	}()
	w := flightwire.NewWriter(stream, schema)
	defer w.Close()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case chunk, ok := <-chunks:
			if !ok {
				return w.Close()
			}
			if chunk.Err != nil {
				if chunk.Data != nil {
					chunk.Data.Release()
				}
				return chunk.Err
			}
			err := w.Write(chunk.Data, chunk.AppMetadata)
			chunk.Data.Release()
			if err != nil {
				return err
			}
		}
	}
}

// stopOnSendFailure wraps the Flight service so that a DoGet whose send to the client fails
// stops at once. arrow-go's DoGet returns from a failed send of a record batch without
// releasing the batch it was writing, so every abandoned stream would keep one batch of the
// query's memory for good. Here a failed send is reported to arrow-go as a success, and the
// call's context is canceled at once, so arrow-go releases that batch, sees the context end on
// its next step and returns; the stream's producer stops with the context. The call then ends
// with the send's own error.
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
