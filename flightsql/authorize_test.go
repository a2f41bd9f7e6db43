package flightsql

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/auth"
)

// loggedIn is arrow-go's Flight SQL client of ts logged in as user, with the context that
// carries its token.
func (ts *secureTestServer) loggedIn(t *testing.T, user string) (*flightsql.Client, context.Context) {
	t.Helper()
	cl, err := flightsql.NewClient(ts.addr, nil, nil, grpc.WithTransportCredentials(credentials.NewTLS(ts.clientTLS(t))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl, login(t, cl.Client, user)
}

// TestRolesDecideWhatRuns: a reader queries and reads metadata but changes nothing, whichever
// way a statement arrives (statement, update, prepared, bulk ingest, load); a writer changes
// memory tables but loads no dataset; an admin loads.
func TestRolesDecideWhatRuns(t *testing.T) {
	ts := startSecureServer(t, engine.Config{NoDemo: true}, Options{})
	writer, wctx := ts.loggedIn(t, "writer")
	reader, rctx := ts.loggedIn(t, "reader")
	admin, actx := ts.loggedIn(t, "admin")

	for _, stmt := range []string{"CREATE TABLE t (x BIGINT)", "INSERT INTO t VALUES (1), (2)", "UPDATE t SET x = x + 10 WHERE x = 2", "CREATE VIEW v AS SELECT x FROM t"} {
		if _, err := writer.ExecuteUpdate(wctx, stmt); err != nil {
			t.Fatalf("writer: %s: %v", stmt, err)
		}
	}
	if rows := readAs(t, rctx, reader, "SELECT x FROM t ORDER BY x"); len(rows) != 2 || rows[1] != "12" {
		t.Errorf("reader's SELECT = %v", rows)
	}
	if _, err := reader.GetTables(rctx, &flightsql.GetTablesOpts{}); err != nil {
		t.Errorf("reader's metadata: %v", err)
	}
	denied := func(who, what string, err error) {
		t.Helper()
		wantStatus(t, who+": "+what, err, codes.PermissionDenied)
	}
	for _, stmt := range []string{"INSERT INTO t VALUES (3)", "DELETE FROM t", "UPDATE t SET x = 0", "DROP TABLE t", "DROP VIEW v", "CREATE TABLE r (y INT)", "CREATE TABLE r AS SELECT * FROM t"} {
		_, err := reader.ExecuteUpdate(rctx, stmt)
		denied("reader", stmt, err)
		_, err = reader.Execute(rctx, stmt) // GetFlightInfo of a statement without rows runs it there
		denied("reader", stmt+" (GetFlightInfo)", err)
	}
	prep, err := reader.Prepare(rctx, "INSERT INTO t VALUES (?)")
	if err != nil {
		t.Fatalf("preparing is reading: %v", err)
	}
	_, err = prep.ExecuteUpdate(rctx)
	denied("reader", "a prepared INSERT", err)
	_, err = prep.Execute(rctx)
	denied("reader", "a prepared INSERT through GetFlightInfo", err)
	// The command of the prepared INSERT redeemed as a ticket.
	handle := anyCmd(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: prep.Handle()})
	rdr, err := reader.DoGet(rctx, &flight.Ticket{Ticket: handle})
	if err == nil {
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
	}
	denied("reader", "DoGet of a prepared INSERT's command", err)
	_ = prep.Close(rctx)

	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	_, err = ingest(rctx, reader, ingestOpts("t", "append"), ingestBatch(t, schema, `[{"x": 5}]`))
	denied("reader", "bulk ingest", err)
	if n, err := ingest(wctx, writer, ingestOpts("t", "append"), ingestBatch(t, schema, `[{"x": 5}]`)); err != nil || n != 1 {
		t.Errorf("writer's bulk ingest: %d, %v", n, err)
	}
	if rows := readAs(t, rctx, reader, "SELECT count(*) FROM t"); len(rows) != 1 || rows[0] != "3" {
		t.Errorf("after the refusals the table has %v rows, want 3", rows)
	}

	load := &flight.Action{Type: ActionLoad, Body: []byte(`{"name": "ds", "query": "SELECT 1"}`)}
	denied("reader", "load", recvErr(reader.Client.DoAction(rctx, load)))
	denied("writer", "load", recvErr(writer.Client.DoAction(wctx, load)))
	// An admin passes the check; a server without data nodes then cannot load.
	if err := recvErr(admin.Client.DoAction(actx, load)); status.Code(err) == codes.PermissionDenied || status.Code(err) == codes.Unauthenticated {
		t.Errorf("admin's load was refused: %v", err)
	}
	if _, err := writer.ExecuteUpdate(wctx, "DROP TABLE t"); err != nil {
		t.Errorf("writer's DROP TABLE: %v", err)
	}
}

// startNodeFor serves a data node over engine cfg that verifies with key; users may be nil.
func startNodeFor(t *testing.T, cfg engine.Config, key *ticket.Keyring, users *auth.Users) string {
	t.Helper()
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, eng, key)
	actions := cluster.NodeConfig{ID: "node", Version: "test", Key: key, Store: rt, Shuffles: rt}
	_, addr, _ := serveEngine(t, eng, Options{TicketKey: key, Node: rt, Extend: cluster.NodeActions(actions), DataNode: true, Users: users})
	return addr
}

// TestDataNodesRunOnlyWhatTheHeadHandsOut: a head requiring logins divides a query over two data
// nodes, one given the users file and one not. ADBC follows the endpoints with its login's
// token. A ticket is redeemed only with the login of the user it was issued to; a data node runs
// no statement sent to it directly; a data node with the users file answers every call without a
// login UNAUTHENTICATED.
func TestDataNodesRunOnlyWhatTheHeadHandsOut(t *testing.T) {
	wh := demoWarehouse(t)
	newEngineConfig := func() engine.Config {
		return engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake"}
	}
	key := ticket.NewKeyring([]byte("cluster secret"), nil)
	users := testUsers(t)
	nodes := []string{startNodeFor(t, newEngineConfig(), key, users), startNodeFor(t, newEngineConfig(), key, nil)}
	headCfg := newEngineConfig()
	headCfg.DataNodes = func() int { return len(nodes) }
	head := startServer(t, headCfg, Options{TicketKey: key, Users: users, Logger: quietLogger, DataNodes: func() []string { return nodes }})
	const divided = "SELECT DISTINCT city FROM demo.rides" // grouped on each node: one endpoint per node

	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{
		adbc.OptionKeyURI: "grpc://" + head.addr, adbc.OptionKeyUsername: "reader", adbc.OptionKeyPassword: "r-pass",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cnxn, err := db.Open(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	defer cnxn.Close()
	if _, rows := adbcQuery(t, cnxn, divided); len(rows) != 8 {
		t.Errorf("ADBC over the data nodes: %d rows, want 8", len(rows))
	}
	// EXPLAIN ANALYZE runs each node's share as the user who asked: the head presents that login.
	_, rows := adbcQuery(t, cnxn, "EXPLAIN ANALYZE "+divided)
	if text := strings.Join(rows, "\n"); strings.Count(text, "): final stage rows=") != 2 {
		t.Errorf("EXPLAIN ANALYZE did not run the final stage on both data nodes:\n%s", text)
	}

	plain := func(addr string) *flightsql.Client {
		cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	headCl := plain(head.addr)
	rctx := login(t, headCl.Client, "reader")
	wctx := login(t, headCl.Client, "writer")
	info, err := headCl.Execute(rctx, divided)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 2 {
		t.Fatalf("%d endpoints, want one per data node", len(info.Endpoint))
	}
	anon := testContext(t)
	for i, ep := range info.Endpoint {
		if ep.Location[0].Uri != "grpc://"+nodes[i] {
			t.Fatalf("endpoint %d at %s", i, ep.Location[0].Uri)
		}
		node := plain(nodes[i])
		if _, err := readTicket(rctx, node, ep.Ticket); err != nil {
			t.Errorf("node %d: the reader's ticket with the reader's login: %v", i, err)
		}
		_, err := readTicket(wctx, node, ep.Ticket)
		wantStatus(t, "another user's login", err, codes.PermissionDenied)
		_, err = readTicket(anon, node, ep.Ticket)
		wantStatus(t, "no login", err, codes.Unauthenticated)
		// A client's statement sent to the data node does not run, logged in or not.
		_, err = node.Execute(rctx, "SELECT 1")
		wantStatus(t, "a statement sent to a data node", err, codes.PermissionDenied)
		_, err = node.ExecuteUpdate(rctx, "CREATE TABLE x (a INT)")
		wantStatus(t, "an update sent to a data node", err, codes.PermissionDenied)
		_, err = node.GetCatalogs(rctx)
		wantStatus(t, "metadata asked of a data node", err, codes.PermissionDenied)
	}
	// The node with the users file answers every call without a login UNAUTHENTICATED, as the
	// head does.
	for _, server := range []string{head.addr, nodes[0]} {
		cl := plain(server).Client
		for name, call := range everyCall(anon, cl, info.Endpoint[0].Ticket) {
			wantStatus(t, server+": "+name, call(), codes.Unauthenticated)
		}
	}
}

// readTicket redeems tk at cl and counts the rows.
func readTicket(ctx context.Context, cl *flightsql.Client, tk *flight.Ticket) (int, error) {
	rdr, err := cl.DoGet(ctx, tk)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	n := 0
	for rdr.Next() {
		n += int(rdr.RecordBatch().NumRows())
	}
	return n, rdr.Err()
}

// readAs runs a query with ctx's login and renders its rows.
func readAs(t *testing.T, ctx context.Context, cl *flightsql.Client, query string) []string {
	t.Helper()
	info, err := cl.Execute(ctx, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	var rows []string
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatalf("%s: DoGet: %v", query, err)
		}
		rows = append(rows, renderRows(t, rdr)...)
		rdr.Release()
	}
	return rows
}
