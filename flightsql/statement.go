package flightsql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/schedule"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/metrics"
	"github.com/cachedb/cachedb/node"
)

// emptySchema is the schema of the result of a statement that returns no rows.
var emptySchema = arrow.NewSchema(nil, nil)

// GetFlightInfoStatement plans a query to report its schema and returns a signed ticket that
// carries the SQL text; the query runs at DoGet. A statement that returns no rows runs here,
// and its ticket yields an empty result.
func (s *Server) GetFlightInfoStatement(ctx context.Context, cmd fsql.StatementQuery, desc *flight.FlightDescriptor) (_ *flight.FlightInfo, err error) {
	// A query is counted when its DoGet ends; here when it fails, runs here, or goes to the
	// data nodes.
	rec := startStatement(metrics.KindQuery)
	defer func() { rec.endOnError(err) }()
	if err := noTransaction(cmd.GetTransactionId()); err != nil {
		return nil, err
	}
	release, err := s.slots.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	query := engine.SessionText(ctx, cmd.GetQuery())
	if opts, ok, err := epochOptions(ctx, query); err != nil || ok {
		if err != nil {
			return nil, err
		}
		rec.kind = metrics.KindTraining
		return s.epochInfo(ctx, desc, query, opts)
	}
	ctx, done := s.statementContext(ctx)
	defer done()
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
		session = engine.Session{MemoryLimit: session.MemoryLimit, StatementTimeout: session.StatementTimeout, SQLMode: session.SQLMode}
	}
	st := newStage(prep.SQL, session, prep.Pins, s.now().Add(s.opts.TicketTTL))
	st.DatasetRows = s.eng.DatasetRows(prep.Pins)
	if !prep.IsQuery {
		rec.kind = metrics.KindUpdate
		if err := s.authorizeStatement(ctx, query); err != nil {
			return nil, err
		}
		if _, err := s.runUpdate(ctx, query, nil); err != nil {
			return nil, err
		}
		rec.end(nil)
		return s.flightInfo(desc, emptySchema, st.Expires, emptyTicket{})
	}
	if info, err := s.dataNodeInfo(ctx, desc, prep.Schema, st); info != nil || err != nil {
		if info != nil && onDataNodes(info) {
			rec.end(nil) // the data nodes stream it: each counts its share (kind stage)
		}
		return info, err
	}
	return s.flightInfo(desc, prep.Schema, st.Expires, statementTicket{Stage: st, User: userOf(ctx)})
}

// newStage is a statement ticket's query: sqlText in session at pins, expiring at expires; a
// distributed execution (dataNodeInfo) fills in the rest.
func newStage(sqlText string, session engine.Session, pins map[string]string, expires time.Time) cluster.Stage {
	return cluster.Stage{SQL: sqlText, Catalog: session.Catalog, Schema: session.Schema, Pins: pins, Expires: expires,
		MemoryLimit: session.MemoryLimit, Timeout: session.StatementTimeout, SQLMode: session.SQLMode}
}

// GetSchemaStatement reports the result schema of a query without running it (an empty
// schema for a statement that returns no rows).
func (s *Server) GetSchemaStatement(ctx context.Context, cmd fsql.StatementQuery, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	prep, err := s.eng.Prepare(ctx, engine.SessionText(ctx, cmd.GetQuery()))
	if err != nil {
		return nil, err
	}
	schema := prep.Schema
	if !prep.IsQuery || schema == nil {
		schema = emptySchema
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(schema, s.opts.Alloc)}, nil
}

// runtime is the node runtime that runs stages and training reads here.
func (s *Server) runtime() (*node.Runtime, error) {
	if s.opts.Node == nil {
		return nil, errs.Unavailablef("this server runs no node runtime: it serves no distributed stages or training reads")
	}
	return s.opts.Node, nil
}

// DoGetStatement redeems a ticket from GetFlightInfoStatement: it runs the query and streams
// its rows. Tickets this server did not sign are refused with InvalidArgument.
func (s *Server) DoGetStatement(ctx context.Context, cmd fsql.StatementQueryTicket) (_ *arrow.Schema, _ <-chan flight.StreamChunk, err error) {
	rec := startStatement(metrics.KindQuery)
	defer func() { rec.endOnError(err) }()
	stream := ctx
	opened, err := s.tickets.Open(cmd.GetStatementHandle(), s.now())
	if err != nil {
		return nil, nil, err
	}
	switch opened.Kind {
	case ticket.Empty:
		if _, err := ticket.Decode[emptyTicket](opened); err != nil {
			return nil, nil, err
		}
		rec = nil // the statement was counted when it ran, at GetFlightInfo
		return emptySchema, emptyStream(), nil
	case ticket.Training:
		rec.kind = metrics.KindTraining
		tt, err := ticket.Decode[trainingTicket](opened)
		if err != nil {
			return nil, nil, err
		}
		if err := checkTicketUser(ctx, tt.User); err != nil {
			return nil, nil, err
		}
		slice, err := tt.slice()
		if err != nil {
			return nil, nil, err
		}
		rt, err := s.runtime()
		if err != nil {
			return nil, nil, err
		}
		rdr, err := rt.ReadEpoch(ctx, slice)
		if err != nil {
			return nil, nil, err
		}
		return rdr.Schema(), s.streamResults(ctx, rec, rdr.Schema(), rdr, 1, nil, nil), nil
	}
	t, err := ticket.Decode[statementTicket](opened)
	if err != nil {
		return nil, nil, err
	}
	if err := checkTicketUser(ctx, t.User); err != nil {
		return nil, nil, err
	}
	t.Stage.Expires = opened.Expires
	release, err := s.slots.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	streaming := false
	defer func() {
		if !streaming { // an error or a panic before the stream took the slot over
			release()
		}
	}()
	// The ticket's session, not the caller's cookie, is the statement's: its limits are the
	// ones of the session that planned it, on whichever process redeems it.
	ctx, done := s.statementContext(engine.WithSession(ctx, sessionOf(t.Stage)))
	var res *engine.Result
	if t.Stage.Query != "" {
		if t.Self >= 0 { // a data node's share; Self -1 is the head gathering the query's result
			rec.kind = metrics.KindStage
		}
		var rt *node.Runtime
		if rt, err = s.runtime(); err == nil {
			res, err = rt.ExecuteStage(ctx, t.Stage, t.Self)
		}
	} else {
		res, err = s.eng.Execute(ctx, t.Stage.SQL, nil)
	}
	if err != nil {
		done()
		return nil, nil, err
	}
	rdr, err := queryReader(res)
	if err != nil {
		done()
		return nil, nil, err
	}
	// The stream sends on the call's own context, so that a statement stopped by its timeout
	// still reports why; the statement's context ends with the reader.
	streaming = true
	return rdr.Schema(), s.streamResults(stream, rec, rdr.Schema(), endWith(rdr, done), 1, nil, release), nil
}

// DoPutCommandStatementUpdate runs a statement and reports the rows it changed (-1 when the
// statement was a query, whose rows are discarded).
func (s *Server) DoPutCommandStatementUpdate(ctx context.Context, cmd fsql.StatementUpdate) (_ int64, err error) {
	defer endStatement(metrics.KindUpdate, time.Now(), &err)
	if err := noTransaction(cmd.GetTransactionId()); err != nil {
		return 0, err
	}
	release, err := s.slots.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	ctx, done := s.statementContext(ctx)
	defer done()
	query := engine.SessionText(ctx, cmd.GetQuery())
	if err := s.authorizeStatement(ctx, query); err != nil {
		return 0, err
	}
	return s.runUpdate(ctx, query, nil)
}

// runUpdate executes a statement for its effect and returns the rows it changed; a query's
// reader is released unread and counts as -1 (unknown).
func (s *Server) runUpdate(ctx context.Context, query string, params []scalar.Scalar) (int64, error) {
	if use, ok, err := s.eng.UseSession(query); ok {
		// USE db: the session cookie (session.go) carries the choice to the client's later calls.
		if err != nil {
			return 0, err
		}
		return 0, setSessionCookie(ctx, engine.SessionFrom(ctx).WithDatabase(use), sessionCookieAge)
	}
	if next, ok, err := s.eng.SetSession(query, engine.SessionFrom(ctx)); ok {
		// SET: a session limit changed the same way (others are accepted and change nothing).
		if err != nil {
			return 0, err
		}
		if cur := engine.SessionFrom(ctx); next.MemoryLimit == cur.MemoryLimit && next.StatementTimeout == cur.StatementTimeout && sameMode(next.SQLMode, cur.SQLMode) {
			return 0, nil
		}
		return 0, setSessionCookie(ctx, next, sessionCookieAge)
	}
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

// sameMode reports whether two sessions' sql_mode are the same (nil: the server's default).
func sameMode(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

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

// flightInfo describes a result reachable through one ticket on this server, carrying p.
func (s *Server) flightInfo(desc *flight.FlightDescriptor, schema *arrow.Schema, expires time.Time, p ticket.Payload) (*flight.FlightInfo, error) {
	tk, err := s.sealTicket(expires, p)
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.opts.Alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tk}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// dataNodeInfo answers a query with endpoints at the data nodes when there are data nodes and
// the query reads tables they can read (engine.Distribute); it returns nil, nil when the query
// must run here alone. The scan tasks are placed on the nodes (schedule.PlaceScans); when the
// final stage runs on the nodes each node that has a part gets an endpoint located there,
// otherwise the one endpoint is this head, which gathers from the nodes what it needs.
func (s *Server) dataNodeInfo(ctx context.Context, desc *flight.FlightDescriptor, schema *arrow.Schema, st cluster.Stage) (*flight.FlightInfo, error) {
	plan, st, err := s.placeStage(ctx, st)
	if err != nil || plan == nil {
		return nil, err
	}
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.opts.Alloc),
		FlightDescriptor: desc,
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
	addEndpoint := func(self int, location string) error {
		tk, err := s.sealTicket(st.Expires, statementTicket{Stage: st, Self: self, User: userOf(ctx)})
		if err != nil {
			return err
		}
		ep := &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: tk}}
		if location != "" {
			ep.Location = []*flight.Location{{Uri: s.locationURI(location)}}
		}
		info.Endpoint = append(info.Endpoint, ep)
		return nil
	}
	if !plan.OnNodes {
		return info, addEndpoint(-1, "")
	}
	for _, i := range finalStageNodes(plan, st) {
		if err := addEndpoint(i, st.Nodes[i]); err != nil {
			return nil, err
		}
	}
	return info, nil
}

// finalStageNodes are the data nodes, by index in st.Nodes, that run a share of the final
// stage of plan when it runs on the nodes: those reading the root scan's tasks, or all.
func finalStageNodes(plan *engine.DistributedPlan, st cluster.Stage) []int {
	var out []int
	for i := range st.Nodes {
		if plan.RootScan >= 0 && !slices.Contains(st.Owners[plan.RootScan], i) {
			continue
		}
		out = append(out, i)
	}
	return out
}

// placeStage plans st's query over the data nodes when there are some and the query reads
// tables they can read (engine.Distribute), and places its scan tasks on them
// (schedule.PlaceScans): it returns the plan and st naming its execution (Query, Nodes,
// Owners), or a nil plan when the query must run here alone.
func (s *Server) placeStage(ctx context.Context, st cluster.Stage) (*engine.DistributedPlan, cluster.Stage, error) {
	if s.opts.DataNodes == nil {
		return nil, st, nil
	}
	session := sessionOf(st)
	nodes := s.opts.DataNodes()
	if len(nodes) == 0 && !readsDatasets(st.Pins) {
		// No node to place on, and no dataset held by one (only a dataset's tasks have
		// locations): the head runs the statement as planning it for nodes would conclude,
		// without that planning (a bind and a plan, table metadata read again).
		return nil, st, nil
	}
	plan, err := s.eng.Distribute(engine.WithSession(ctx, session), st.SQL, max(len(nodes), 1))
	if err != nil || plan == nil {
		return nil, st, err
	}
	// Free scan tasks go to the first placeable nodes; nodes holding the query's data join them.
	placeable := len(nodes)
	if s.opts.ReachableNodes != nil {
		if more := schedule.ScanHolders(placementScans(plan), nodes, s.opts.ReachableNodes()); len(more) > 0 {
			nodes = append(slices.Clone(nodes), more...)
			if plan, err = s.eng.Distribute(engine.WithSession(ctx, session), st.SQL, len(nodes)); err != nil || plan == nil {
				return nil, st, err
			}
		}
	}
	owners, onNodes, err := schedule.PlaceScans(placementScans(plan), nodes, placeable)
	if err != nil || !onNodes {
		return nil, st, err
	}
	st.Query, st.Nodes, st.Owners = newQueryID(), nodes, owners
	st.Datasets = plan.DatasetShapes(nodes)
	return plan, st, nil
}

// readsDatasets reports whether pins, the table versions a statement resolved, name a table of
// the primary catalog: a dataset, whose partitions data nodes hold (or a memory table).
func readsDatasets(pins map[string]string) bool {
	for _, v := range pins {
		if catalog.PinnedInPrimary(v) {
			return true
		}
	}
	return false
}

// newQueryID names one distributed execution.
func newQueryID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// placementScans is what the scheduler needs of a plan's distributed scans.
func placementScans(plan *engine.DistributedPlan) []schedule.Scan {
	out := make([]schedule.Scan, len(plan.Scans))
	for i, div := range plan.Scans {
		out[i] = schedule.Scan{Locations: div.Locations, Bytes: div.Bytes}
	}
	return out
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
