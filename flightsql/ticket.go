package flightsql

import (
	"time"

	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/errs"
)

// Statement tickets carry everything DoGet needs, so the server keeps no state between
// GetFlightInfo and DoGet and a ticket may be redeemed more than once until it expires. They are
// ticket envelopes (cluster/ticket) of three kinds, wrapped in Flight SQL's
// TicketStatementQuery: statementTicket, emptyTicket and trainingTicket (epoch.go).

// statementTicket is the payload of a ticket.Statement ticket: a query for DoGet to run.
type statementTicket struct {
	// Stage holds the SQL and the naming session it was planned in (catalog, schema, pinned
	// table versions); its expiry is the ticket's. With a Query id the ticket is one part of
	// that distributed execution (node.Runtime.ExecuteStage), redeemed by node Self (-1: the head);
	// without, DoGet runs the whole query here.
	Stage cluster.Stage `json:"stage"`
	Self  int           `json:"self,omitempty"`
	// User is the login the ticket was issued to ("" without one); only that user redeems it.
	User string `json:"user,omitempty"`
}

// TicketKind makes statementTicket the payload of ticket.Statement tickets.
func (statementTicket) TicketKind() ticket.Kind { return ticket.Statement }

// sessionOf is the naming session st's SQL runs in.
func sessionOf(st cluster.Stage) engine.Session {
	return engine.Session{Catalog: st.Catalog, Schema: st.Schema, Pins: st.Pins, MemoryLimit: st.MemoryLimit, StatementTimeout: st.Timeout, SQLMode: st.SQLMode}
}

// emptyTicket is the payload of a ticket.Empty ticket: the statement already ran in
// GetFlightInfo, DoGet yields an empty result.
type emptyTicket struct{}

// TicketKind makes emptyTicket the payload of ticket.Empty tickets.
func (emptyTicket) TicketKind() ticket.Kind { return ticket.Empty }

// sealTicket seals p with the server's current key and wraps it as a Flight SQL statement
// ticket, ready for a FlightEndpoint.
func (s *Server) sealTicket(expires time.Time, p ticket.Payload) ([]byte, error) {
	handle, err := s.tickets.Seal(expires, p)
	if err != nil {
		return nil, err
	}
	wrapped, err := fsql.CreateStatementQueryTicket(handle)
	if err != nil {
		return nil, errs.Internalf("encoding ticket: %v", err)
	}
	return wrapped, nil
}
