package flightsql

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg"
	"github.com/cachedb/cachedb/catalog/iceberg/demo"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
)

// TestIcebergCatalogThroughADBC serves the embedded warehouse as a source catalog and checks what
// a client sees: the catalog, its namespace as a db schema, the table with its Arrow schema, the
// catalog chosen through the connection's current catalog / db schema, and a query.
func TestIcebergCatalogThroughADBC(t *testing.T) {
	ctx := context.Background()
	lake := openLake(t, demoWarehouse(t))
	ts := startServer(t, engine.Config{NoDemo: true, Sources: []catalog.Catalog{lake}}, Options{})
	cnxn := ts.sessionConn(t)

	cat, schema := "lake", "demo"
	got, err := cnxn.GetTableSchema(ctx, &cat, &schema, "rides")
	if err != nil {
		t.Fatal(err)
	}
	if i := got.FieldIndices("pickup_at"); len(i) != 1 || got.Field(i[0]).Type.ID() != arrow.TIMESTAMP {
		t.Errorf("rides schema = %s", got)
	}
	rdr, err := cnxn.GetObjects(ctx, adbc.ObjectDepthTables, &cat, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := renderRows(t, rdr)
	rdr.Release()
	if len(rows) != 1 {
		t.Fatalf("GetObjects(lake) = %v", rows)
	}
	for _, want := range []string{"lake", "demo", "rides"} {
		if !strings.Contains(rows[0], want) {
			t.Errorf("GetObjects(lake) lacks %q: %s", want, rows[0])
		}
	}

	if v, err := firstValue(t, cnxn, "SELECT count(*) FROM lake.rides"); err != nil || v != "200000" {
		t.Errorf("lake.rides: %s %v", v, err)
	}
	opts := cnxn.(adbc.GetSetOptions)
	if err := opts.SetOption(adbc.OptionKeyCurrentCatalog, "lake"); err != nil {
		t.Fatal(err)
	}
	if err := opts.SetOption(adbc.OptionKeyCurrentDbSchema, "demo"); err != nil {
		t.Fatal(err)
	}
	if v, err := firstValue(t, cnxn, "SELECT count(*) FROM rides WHERE city = 'Lisbon'"); err != nil || v == "0" || v == "" {
		t.Errorf("rides in the session's catalog and schema: %s %v", v, err)
	}
	if err := opts.SetOption(adbc.OptionKeyCurrentDbSchema, "no_such_namespace"); err != nil {
		// Namespaces are resolved lazily: an unknown one surfaces as "table not found".
		t.Logf("SetOption(db_schema) refused: %v", err)
	}
	if _, err := firstValue(t, cnxn, "SELECT count(*) FROM rides"); err == nil {
		t.Error("rides resolved in a namespace that does not exist")
	}
}

// TestTicketsPinSnapshots checks that a statement ticket carries the snapshot GetFlightInfo
// planned against, and that DoGet reads that snapshot, not whatever is current by then.
func TestTicketsPinSnapshots(t *testing.T) {
	ctx := context.Background()
	lake := openLake(t, demoWarehouse(t))
	ts := startServer(t, engine.Config{NoDemo: true, Sources: []catalog.Catalog{lake}, DefaultCatalog: "lake"}, Options{})
	current, err := ts.eng.Catalogs().Table(ctx, "demo.rides")
	if err != nil {
		t.Fatal(err)
	}
	initial, err := ts.eng.Catalogs().Table(ctx, "demo.rides@initial")
	if err != nil {
		t.Fatal(err)
	}
	currentVersion := current.(catalog.VersionedTable).Version()
	initialVersion := initial.(catalog.VersionedTable).Version()
	if currentVersion == "" || currentVersion == initialVersion {
		t.Fatalf("versions: current %q, initial %q", currentVersion, initialVersion)
	}

	// GetFlightInfo puts the current snapshot into the ticket.
	cl := ts.arrowClient(t)
	query := "SELECT count(*) FROM demo.rides"
	info, err := cl.Execute(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	var wrapped anypb.Any
	if err := proto.Unmarshal(info.Endpoint[0].Ticket.Ticket, &wrapped); err != nil {
		t.Fatal(err)
	}
	var handle pb.TicketStatementQuery
	if err := wrapped.UnmarshalTo(&handle); err != nil {
		t.Fatal(err)
	}
	stmt, expires, err := ticket.OpenAs[statementTicket](ts.srv.tickets, handle.GetStatementHandle(), ts.srv.now())
	if err != nil {
		t.Fatal(err)
	}
	if got := stmt.Stage.Pins["demo.rides"]; got != currentVersion {
		t.Errorf("ticket pins demo.rides at %q, want %q", got, currentVersion)
	}

	// DoGet reads the pinned snapshot: a ticket pinned to the first snapshot counts its rows.
	stmt.Stage.Pins = map[string]string{"demo.rides": initialVersion}
	raw, err := ts.srv.sealTicket(expires, stmt)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := cl.DoGet(ctx, &flight.Ticket{Ticket: raw})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var got string
	for rdr.Next() {
		if rec := rdr.RecordBatch(); rec.NumRows() > 0 {
			got = rec.Column(0).ValueStr(0)
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	cnxn := ts.sessionConn(t)
	want, err := firstValue(t, cnxn, "SELECT count(*) FROM demo.`rides@initial`")
	if err != nil {
		t.Fatal(err)
	}
	all, err := firstValue(t, cnxn, query)
	if err != nil {
		t.Fatal(err)
	}
	if got != want || got == all {
		t.Errorf("count at the pinned first snapshot = %s, want %s (all rows: %s)", got, want, all)
	}
}

// TestQueriesDividedAmongDataNodes runs a head and two data nodes (servers over their own
// engines with the same catalog and the same ticket key). A query that divides into shares is
// answered with one endpoint per node, located there; ADBC reads both and gets every row once.
func TestQueriesDividedAmongDataNodes(t *testing.T) {
	ctx := context.Background()
	wh := demoWarehouse(t)
	newEngineConfig := func() engine.Config {
		return engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake"}
	}
	key := ticket.NewKeyring([]byte("cluster secret"), nil)
	nodeA := startDataNode(t, newEngineConfig(), key)
	nodeB := startDataNode(t, newEngineConfig(), key)
	stranger := startServer(t, newEngineConfig(), Options{TicketKey: ticket.NewKeyring([]byte("another secret"), nil)})
	nodes := []string{nodeA.addr, nodeB.addr}
	head := startServer(t, newEngineConfig(), Options{TicketKey: key, DataNodes: func() []string { return nodes }})

	cl := head.arrowClient(t)
	query := "SELECT ride_id, fare FROM demo.rides WHERE city = 'Lisbon'"
	info, err := cl.Execute(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 2 {
		t.Fatalf("%d endpoints, want one per data node", len(info.Endpoint))
	}
	for i, ep := range info.Endpoint {
		if len(ep.Location) != 1 || ep.Location[0].Uri != "grpc://"+nodes[i] {
			t.Errorf("endpoint %d at %v, want %s", i, ep.Location, nodes[i])
		}
	}

	// ADBC follows the locations; the rows equal those of an undivided run.
	cnxn := head.sessionConn(t)
	divided, err := firstValue(t, cnxn, "SELECT count(*) FROM ("+query+") q") // aggregates run whole
	if err != nil {
		t.Fatal(err)
	}
	_, rows := adbcQuery(t, cnxn, query)
	if strconv.Itoa(len(rows)) != divided || len(rows) == 0 {
		t.Fatalf("divided query returned %d rows, the count says %s", len(rows), divided)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r] {
			t.Fatalf("row %s returned twice", r)
		}
		seen[r] = true
	}

	// A node that does not share the key refuses the head's tickets.
	wrong := stranger.arrowClient(t)
	rdr, err := wrong.DoGet(ctx, info.Endpoint[0].Ticket)
	if err == nil {
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
	}
	if err == nil || !strings.Contains(err.Error(), "not issued by this cluster's head") {
		t.Errorf("a node with another key served the ticket: %v", err)
	}
}

// openLake opens wh as the Iceberg catalog "lake".
func openLake(t *testing.T, wh demo.Warehouse) *iceberg.Catalog {
	t.Helper()
	lake, err := iceberg.Open(context.Background(), wh.CatalogConfig("lake"))
	if err != nil {
		t.Fatal(err)
	}
	return lake
}

// startDataNode serves a data node: Flight SQL plus the node's shuffle tickets, signed with key.
// Its server stops at the end of the test, or earlier by stopDataNode.
func startDataNode(t *testing.T, cfg engine.Config, key *ticket.Keyring) *testServer {
	t.Helper()
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, eng, key)
	actions := cluster.NodeConfig{ID: "node", Version: "test", Key: key, Store: rt, Shuffles: rt}
	srv, addr, stop := serveEngine(t, eng, Options{TicketKey: key, Node: rt, Extend: cluster.NodeActions(actions)})
	stopDataNodes.Store(addr, stop)
	return &testServer{srv: srv, eng: eng, node: rt, addr: addr}
}

// stopDataNodes holds the stop function of every data node startDataNode serves, by address.
var stopDataNodes sync.Map

// stopDataNode shuts the data node at addr down, as if its process had died.
func stopDataNode(addr string) {
	if stop, ok := stopDataNodes.Load(addr); ok {
		stop.(func())()
	}
}
