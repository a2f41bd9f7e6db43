package flightsql

import (
	"context"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/exec"
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
	if prep.Dataset != "" {
		// A dataset answers the query; its name resolves in the engine's own catalog.
		session = engine.Session{}
	}
	session.Pins = prep.Pins
	t := statementTicket{kind: ticketQuery, expires: s.now().Add(s.opts.TicketTTL), session: session, sql: prep.SQL}
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
	if t.divided {
		res, err = s.eng.ExecuteTasks(engine.WithSession(ctx, t.session), t.sql, t.tasks)
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

// dataNodeInfo answers a query with endpoints at the data nodes when there are data nodes and
// the query divides (engine.Divide); nil otherwise (the query then runs here). Scan tasks whose
// rows a node holds (dataset partitions) are read at that node; the others are spread over the
// alive nodes by the bytes they read. Each endpoint's ticket lists its tasks and is located at
// its node, so clients read the parts in parallel, straight from the nodes.
func (s *Server) dataNodeInfo(ctx context.Context, desc *flight.FlightDescriptor, schema *arrow.Schema, t statementTicket) (*flight.FlightInfo, error) {
	if s.opts.DataNodes == nil {
		return nil, nil
	}
	div, err := s.eng.Divide(engine.WithSession(ctx, t.session), t.sql)
	if err != nil || div == nil {
		return nil, err
	}
	parts, err := assignTasks(div, s.opts.DataNodes())
	if err != nil || len(parts) == 0 {
		return nil, err
	}
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.opts.Alloc),
		FlightDescriptor: desc,
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
	for _, p := range parts {
		t.divided, t.tasks = true, p.tasks
		ticket, err := fsql.CreateStatementQueryTicket(s.tickets.encode(t))
		if err != nil {
			return nil, errs.Internalf("encoding ticket: %v", err)
		}
		info.Endpoint = append(info.Endpoint, &flight.FlightEndpoint{
			Ticket:   &flight.Ticket{Ticket: ticket},
			Location: []*flight.Location{{Uri: "grpc://" + p.addr}},
		})
	}
	return info, nil
}

// nodePart is the scan tasks one data node serves of a divided query.
type nodePart struct {
	addr  string
	tasks []int
}

// assignTasks gives each located task to its node and spreads the others over nodes by bytes
// (exec.AssignShares), merging both per node, in node order, located nodes first. With no alive
// node and no located task there is nothing to assign (nil: run the query here). A task located
// at a node that is not alive is an errs.Unavailable error: its rows are being rebuilt.
func assignTasks(div *engine.Division, nodes []string) ([]nodePart, error) {
	alive := map[string]bool{}
	for _, n := range nodes {
		alive[n] = true
	}
	byNode := map[string][]int{}
	var order []string
	add := func(addr string, task int) {
		if _, ok := byNode[addr]; !ok {
			order = append(order, addr)
		}
		byNode[addr] = append(byNode[addr], task)
	}
	var free []int
	for i, loc := range div.Locations {
		switch {
		case loc == "":
			free = append(free, i)
		case !alive[loc]:
			return nil, errs.Unavailablef("part of this query's data is on data node %s, which is not alive; its partitions are being rebuilt, try again shortly", loc)
		default:
			add(loc, i)
		}
	}
	if len(free) > 0 {
		if len(nodes) == 0 {
			if len(order) == 0 {
				return nil, nil
			}
			return nil, errs.Unavailablef("no data node is alive to read this query's tables")
		}
		sizes := make([]int64, len(free))
		for i, task := range free {
			sizes[i] = div.Bytes[task]
		}
		for share, members := range exec.AssignShares(sizes, min(len(nodes), len(free))) {
			for _, m := range members {
				add(nodes[share], free[m])
			}
		}
	}
	out := make([]nodePart, 0, len(order))
	for _, addr := range order {
		tasks := byNode[addr]
		slices.Sort(tasks)
		out = append(out, nodePart{addr: addr, tasks: tasks})
	}
	return out, nil
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
