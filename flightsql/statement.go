package flightsql

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/errs"
)

// emptySchema is the schema of the result of a statement that returns no rows.
var emptySchema = arrow.NewSchema(nil, nil)

// GetFlightInfoStatement plans a query to report its schema and returns a signed ticket that
// carries the SQL text; the query runs at DoGet. A statement that returns no rows runs here,
// and its ticket yields an empty result.
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd fsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if err := noTransaction(cmd.GetTransactionId()); err != nil {
		return nil, err
	}
	query := cmd.GetQuery()
	prep, err := s.eng.Prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	if prep.NumParams > 0 {
		return nil, errs.Invalidf("statement has %d ? placeholders; bind them through a prepared statement", prep.NumParams)
	}
	// The ticket pins the snapshots this planning saw, so DoGet reads the same table states.
	session := engine.SessionFrom(ctx)
	session.Pins = prep.Pins
	t := statementTicket{kind: ticketQuery, expires: s.now().Add(s.opts.TicketTTL), session: session, sql: query}
	if prep.IsQuery {
		if info, err := s.dataNodeInfo(ctx, desc, prep.Schema, t); info != nil || err != nil {
			return info, err
		}
	}
	schema := prep.Schema
	if !prep.IsQuery {
		if _, err := s.runUpdate(ctx, query, nil); err != nil {
			return nil, err
		}
		t = statementTicket{kind: ticketEmpty, expires: t.expires}
		schema = emptySchema
	}
	return s.flightInfo(desc, schema, s.tickets.encode(t))
}

// GetSchemaStatement reports the result schema of a query without running it (an empty
// schema for a statement that returns no rows).
func (s *Server) GetSchemaStatement(ctx context.Context, cmd fsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	prep, err := s.eng.Prepare(ctx, cmd.GetQuery())
	if err != nil {
		return nil, err
	}
	schema := prep.Schema
	if !prep.IsQuery || schema == nil {
		schema = emptySchema
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(schema, s.opts.Alloc)}, nil
}

// DoGetStatement redeems a ticket from GetFlightInfoStatement: it runs the query and streams
// its rows. Tickets this server did not sign are refused with InvalidArgument.
func (s *Server) DoGetStatement(ctx context.Context, cmd fsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	t, err := s.tickets.decode(cmd.GetStatementHandle(), s.now())
	if err != nil {
		return nil, nil, err
	}
	if t.kind == ticketEmpty {
		return emptySchema, emptyStream(), nil
	}
	var res *engine.Result
	if t.of > 0 {
		res, err = s.eng.ExecuteShare(engine.WithSession(ctx, t.session), t.sql, t.share, t.of)
	} else {
		res, err = s.eng.Execute(engine.WithSession(ctx, t.session), t.sql, nil)
	}
	if err != nil {
		return nil, nil, err
	}
	rdr, err := queryReader(res)
	if err != nil {
		return nil, nil, err
	}
	return rdr.Schema(), s.streamResults(ctx, rdr.Schema(), rdr, 1, nil), nil
}

// DoPutCommandStatementUpdate runs a statement and reports the rows it changed (-1 when the
// statement was a query, whose rows are discarded).
func (s *Server) DoPutCommandStatementUpdate(ctx context.Context, cmd fsql.StatementUpdate) (int64, error) {
	if err := noTransaction(cmd.GetTransactionId()); err != nil {
		return 0, err
	}
	return s.runUpdate(ctx, cmd.GetQuery(), nil)
}

// runUpdate executes a statement for its effect and returns the rows it changed; a query's
// reader is released unread and counts as -1 (unknown).
func (s *Server) runUpdate(ctx context.Context, query string, params []scalar.Scalar) (int64, error) {
	res, err := s.eng.Execute(ctx, query, params)
	if err != nil {
		return 0, err
	}
	if res.Reader != nil {
		res.Reader.Release()
		return -1, nil
	}
	return res.RowsAffected, nil
}

// queryReader returns the reader of a query result; a statement without rows yields an empty
// reader with an empty schema.
func queryReader(res *engine.Result) (array.RecordReader, error) {
	if res.Reader != nil {
		return res.Reader, nil
	}
	rdr, err := array.NewRecordReader(emptySchema, nil)
	if err != nil {
		return nil, errs.Internalf("empty result: %v", err)
	}
	return rdr, nil
}

// flightInfo describes a result reachable through one ticket on this server.
func (s *Server) flightInfo(desc *flight.FlightDescriptor, schema *arrow.Schema, handle []byte) (*flight.FlightInfo, error) {
	ticket, err := fsql.CreateStatementQueryTicket(handle)
	if err != nil {
		return nil, errs.Internalf("encoding ticket: %v", err)
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.opts.Alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: ticket}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// dataNodeInfo answers a query with one endpoint per data node when there are data nodes and
// the query divides into shares; nil otherwise (the query then runs here). Each endpoint's
// ticket selects one share and is located at its node, so clients read the parts in parallel,
// straight from the nodes.
func (s *Server) dataNodeInfo(ctx context.Context, desc *flight.FlightDescriptor, schema *arrow.Schema, t statementTicket) (*flight.FlightInfo, error) {
	if s.opts.DataNodes == nil {
		return nil, nil
	}
	nodes := s.opts.DataNodes()
	if len(nodes) == 0 {
		return nil, nil
	}
	shares, err := s.eng.Shares(engine.WithSession(ctx, t.session), t.sql)
	if err != nil || shares == 0 {
		return nil, err
	}
	nodes = nodes[:min(len(nodes), shares)]
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.opts.Alloc),
		FlightDescriptor: desc,
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
	for i, addr := range nodes {
		t.share, t.of = i, len(nodes)
		ticket, err := fsql.CreateStatementQueryTicket(s.tickets.encode(t))
		if err != nil {
			return nil, errs.Internalf("encoding ticket: %v", err)
		}
		info.Endpoint = append(info.Endpoint, &flight.FlightEndpoint{
			Ticket:   &flight.Ticket{Ticket: ticket},
			Location: []*flight.Location{{Uri: "grpc://" + addr}},
		})
	}
	return info, nil
}

// commandInfo describes a metadata result whose ticket is the command itself.
func (s *Server) commandInfo(desc *flight.FlightDescriptor, schema *arrow.Schema) *flight.FlightInfo {
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.opts.Alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}

func noTransaction(id []byte) error {
	if len(id) > 0 {
		return errs.Unsupportedf("transactions are not supported")
	}
	return nil
}
