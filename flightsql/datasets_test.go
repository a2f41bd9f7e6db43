package flightsql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg/demo"
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
)

// quietLogger drops the cluster's logs (joins, losses, rebuilds) so test output shows failures.
var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// datasetCluster is a head and its data nodes in this process, each a real Flight SQL server on
// loopback, wired as cmd/cachedb wires them: the head runs the membership, the dataset registry
// and the system catalog; each node runs an engine over the same lake, serves the dataset
// actions and partition tickets, and keeps itself registered through an agent.
type datasetCluster struct {
	head     *testServer
	members  *cluster.Membership
	datasets *cluster.Datasets
	nodes    []*dataNode
	key      *ticket.Keyring

	eventsMu sync.Mutex
	events   []string
}

// dataNode is one data node of a datasetCluster.
type dataNode struct {
	id   string
	addr string
	eng  *engine.Engine
	// stop ends the node's agent and shuts its server down; the head then marks it lost.
	stop func()
	// pause ends the node's agent only: the head hears nothing but still reaches its server,
	// as with a node starved of CPU. resume starts the agent again, as the same process.
	pause, resume func()
}

// serveEngine serves eng on a loopback port; the returned stop (also run at cleanup) shuts the
// server down, once.
func serveEngine(t *testing.T, eng *engine.Engine, opts Options) (*Server, string, func()) {
	t.Helper()
	opts.Logger = quietLogger
	srv := NewServer(eng, opts)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			srv.Shutdown(ctx)
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return srv, lis.Addr().String(), stop
}

func startDatasetCluster(t *testing.T, wh demo.Warehouse, nodes int) *datasetCluster {
	t.Helper()
	return startDatasetClusterWith(t, wh, nodes, Options{})
}

// startDatasetClusterWith starts a dataset cluster whose head also has headOpts' logins and
// grants (Users, JWTs, Grants), and whose servers all cap batches at headOpts.MaxBatchBytes.
func startDatasetClusterWith(t *testing.T, wh demo.Warehouse, nodes int, headOpts Options) *datasetCluster {
	t.Helper()
	c := &datasetCluster{key: ticket.NewKeyring([]byte("dataset test cluster secret"), nil)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	c.members = cluster.NewMembership(cluster.Config{
		HeartbeatInterval: 100 * time.Millisecond,
		// A node late by 2 s takes no new work; only one silent for a minute, restarted, or
		// refusing connections (stopped: its server is shut down) loses its partitions. A busy
		// machine makes nodes late, never lost.
		SuspectAfter: 2 * time.Second,
		LostAfter:    time.Minute,
		OnChange: func(e cluster.Event) {
			c.eventsMu.Lock()
			c.events = append(c.events, fmt.Sprintf("%s %s %s (%s)", time.Now().Format("15:04:05.000"), e.Kind, e.Node.ID, e.Reason))
			c.eventsMu.Unlock()
		},
	})
	// As cmd/cachedb: the registry follows the membership (a lost node's partitions are made
	// again elsewhere) and attaches datasets to the head engine's own catalog.
	mem := memcat.NewCatalog("cachedb")
	c.datasets = cluster.NewDatasets(cluster.DatasetsConfig{Membership: c.members, Catalog: mem, Key: c.key, Logger: quietLogger})
	t.Cleanup(c.datasets.Close)
	system := cluster.NewSystemCatalog(c.members, c.datasets)
	headEng, err := engine.New(engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh), system}, DefaultCatalog: "lake", Memory: mem, Datasets: c.datasets})
	if err != nil {
		t.Fatal(err)
	}
	headRT := newRuntime(t, headEng, c.key)
	srv, headAddr, _ := serveEngine(t, headEng, Options{
		TicketKey:      c.key,
		Node:           headRT,
		DataNodes:      func() []string { return aliveAddrs(c.members) },
		ReachableNodes: func() []string { return cluster.Addrs(cluster.ReachableNodes(c.members.Nodes())) },
		Extend:         cluster.NewActions(c.members, c.key).Wrap,
		Users:          headOpts.Users,
		JWTs:           headOpts.JWTs,
		Grants:         headOpts.Grants,
		MaxBatchBytes:  headOpts.MaxBatchBytes,
	})
	c.head = &testServer{srv: srv, eng: headEng, node: headRT, addr: headAddr}
	go c.members.Run(ctx)

	for i := range nodes {
		id := fmt.Sprintf("node-%d", i)
		eng, err := engine.New(engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake"})
		if err != nil {
			t.Fatal(err)
		}
		rt := newRuntime(t, eng, c.key)
		_, addr, stopServer := serveEngine(t, eng, Options{
			TicketKey:     c.key,
			Node:          rt,
			Extend:        cluster.NodeActions(cluster.NodeConfig{ID: id, Version: "test", Key: c.key, Store: rt, Shuffles: rt}),
			MaxBatchBytes: headOpts.MaxBatchBytes,
		})
		// The node's process keeps one boot ID: an agent started again (resume) registers as
		// the same process.
		bootID := cluster.NewBootID()
		var (
			agentMu   sync.Mutex
			stopAgent func()
		)
		pause := func() {
			agentMu.Lock()
			defer agentMu.Unlock()
			if stopAgent != nil {
				stopAgent()
				stopAgent = nil
			}
		}
		resume := func() {
			agentMu.Lock()
			defer agentMu.Unlock()
			if stopAgent != nil {
				return
			}
			agentCtx, cancel := context.WithCancel(ctx)
			agentDone := make(chan error, 1)
			agent := cluster.NewAgent(cluster.AgentConfig{ID: id, Addr: addr, Head: headAddr, Key: c.key, BootID: bootID, Logger: quietLogger})
			go func() { agentDone <- agent.Run(agentCtx) }()
			stopAgent = func() {
				cancel()
				if err := <-agentDone; err != nil {
					t.Errorf("agent of %s: %v", id, err)
				}
			}
		}
		resume()
		var once sync.Once
		stop := func() {
			once.Do(func() {
				pause()
				stopServer()
			})
		}
		t.Cleanup(stop)
		c.nodes = append(c.nodes, &dataNode{id: id, addr: addr, eng: eng, stop: stop, pause: pause, resume: resume})
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.eventsMu.Lock()
			defer c.eventsMu.Unlock()
			t.Logf("membership events: %s", strings.Join(c.events, "; "))
		}
	})
	waitFor(t, "every data node to register", func() bool { return len(aliveAddrs(c.members)) == nodes })
	return c
}

// aliveAddrs lists the addresses of the data nodes new work goes to, in ID order.
func aliveAddrs(m *cluster.Membership) []string {
	return cluster.Addrs(cluster.PlacementNodes(m.Nodes()))
}

// waitFor polls cond until it holds, failing the test after a minute (a guard against hanging
// on a busy machine; the conditions waited for come within seconds).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// quietConn opens an ADBC connection to addr whose driver logs nowhere (it logs every failed
// endpoint read, and reads fail on purpose while a node is lost), closed when the test ends.
func quietConn(t *testing.T, addr string) adbc.Connection {
	t.Helper()
	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := db.(interface{ SetLogger(*slog.Logger) }); ok {
		l.SetLogger(quietLogger)
	}
	t.Cleanup(func() { db.Close() })
	cnxn, err := db.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cnxn.Close() })
	return cnxn
}

// flightClient is a plain Flight client for addr, closed when the test ends.
func flightClient(t *testing.T, addr string) flight.Client {
	t.Helper()
	cl, err := flight.NewClientWithMiddleware(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// loadSpec runs the cachedb.load action and returns the messages it streamed.
func loadSpec(ctx context.Context, cl flight.Client, spec engine.DatasetSpec) ([]LoadMessage, error) {
	body, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	return loadRaw(ctx, cl, body)
}

func loadRaw(ctx context.Context, cl flight.Client, body []byte) ([]LoadMessage, error) {
	stream, err := cl.DoAction(ctx, &flight.Action{Type: ActionLoad, Body: body})
	if err != nil {
		return nil, err
	}
	var out []LoadMessage
	for {
		res, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		var m LoadMessage
		if err := json.Unmarshal(res.GetBody(), &m); err != nil {
			return out, fmt.Errorf("load message %q: %w", res.GetBody(), err)
		}
		out = append(out, m)
	}
}

// mustLoad loads spec and checks what the load streamed (loaded).
func mustLoad(t *testing.T, ctx context.Context, cl flight.Client, spec engine.DatasetSpec) *LoadedDataset {
	t.Helper()
	msgs, err := loadSpec(ctx, cl, spec)
	return loaded(t, msgs, err)
}

// loaded checks the messages of a load: progress with Done rising by one up to Partitions,
// then one dataset message, which it returns.
func loaded(t *testing.T, msgs []LoadMessage, err error) *LoadedDataset {
	t.Helper()
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if len(msgs) < 2 || msgs[len(msgs)-1].Dataset == nil {
		t.Fatalf("load streamed %+v, want progress then the dataset", msgs)
	}
	ds := msgs[len(msgs)-1].Dataset
	progress := msgs[:len(msgs)-1]
	for i, m := range progress {
		if m.Progress == nil || m.Dataset != nil {
			t.Fatalf("message %d is %+v, want progress", i, m)
		}
		if m.Progress.Partitions != ds.Partitions {
			t.Errorf("progress %d says %d partitions, the dataset has %d", i, m.Progress.Partitions, ds.Partitions)
		}
	}
	if ds.Reused {
		if len(progress) != 1 || progress[0].Progress.Done != ds.Partitions {
			t.Errorf("a reused load reported %+v", progress)
		}
		return ds
	}
	if len(progress) != ds.Partitions {
		t.Errorf("%d progress messages for %d partitions", len(progress), ds.Partitions)
	}
	for i, m := range progress {
		if m.Progress.Done != i+1 {
			t.Errorf("progress %d has Done=%d, want %d", i, m.Progress.Done, i+1)
		}
	}
	if last := progress[len(progress)-1].Progress; last.Rows != ds.Rows {
		t.Errorf("last progress counts %d rows, the dataset %d", last.Rows, ds.Rows)
	}
	return ds
}

type flightsqlClient = flightsql.Client

func newFlightsqlClient(addr string) (*flightsqlClient, error) {
	return flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// grpcCode is the gRPC code behind an error from ADBC or a Flight call.
func grpcCode(err error) codes.Code {
	var ae adbc.Error
	if errors.As(err, &ae) {
		return codes.Code(ae.VendorCode)
	}
	return status.Code(err)
}

// tryQuery runs a query through ADBC and returns its rows as "v1,v2" strings, or the error of
// planning or of reading any endpoint.
func tryQuery(ctx context.Context, cnxn adbc.Connection, query string) ([]string, error) {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(query); err != nil {
		return nil, err
	}
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var rows []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			vals := make([]string, rec.NumCols())
			for c := range vals {
				if rec.Column(c).IsNull(r) {
					vals[c] = "NULL"
				} else {
					vals[c] = rec.Column(c).ValueStr(r)
				}
			}
			rows = append(rows, strings.Join(vals, "|"))
		}
	}
	return rows, rdr.Err()
}

// readEndpoints runs a query through arrow-go's Flight SQL client and reads its endpoints one
// after another, each where it is located (dialing nodes through clients, which it fills), and
// returns the rows sorted. ADBC reads endpoints concurrently, and v1.12.0 races on call options
// when several of those reads fail at once, as they do while a node is lost.
func readEndpoints(ctx context.Context, head *flightsqlClient, clients map[string]*flightsqlClient, query string) ([]string, error) {
	info, err := head.Execute(ctx, query)
	if err != nil {
		return nil, err
	}
	var rows []string
	for _, ep := range info.Endpoint {
		cl := head
		if len(ep.Location) > 0 {
			addr := strings.TrimPrefix(ep.Location[0].Uri, "grpc://")
			if cl = clients[addr]; cl == nil {
				if cl, err = newFlightsqlClient(addr); err != nil {
					return nil, err
				}
				clients[addr] = cl
			}
		}
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			return nil, err
		}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			for r := 0; r < int(rec.NumRows()); r++ {
				vals := make([]string, rec.NumCols())
				for c := range vals {
					vals[c] = rec.Column(c).ValueStr(r)
				}
				rows = append(rows, strings.Join(vals, "|"))
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(rows)
	return rows, nil
}

// sortedRows runs a query and returns its rows sorted (a multiset to compare).
func sortedRows(t *testing.T, cnxn adbc.Connection, query string) []string {
	t.Helper()
	rows, err := tryQuery(testContext(t), cnxn, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	slices.Sort(rows)
	return rows
}

// sameRows reports how got differs from want (both sorted), "" when they are equal.
func sameRows(got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("%d rows, want %d; first difference at %d: %q, want %q", len(got), len(want), i, got[i], want[i])
		}
	}
	return fmt.Sprintf("%d rows, want %d", len(got), len(want))
}

// datasetRow is a row of system.datasets.
type datasetRow struct {
	state                 string
	rows, partitions, gen int64
	nodes                 []string
	hits                  int64
	source                string
}

// systemDatasets reads system.datasets through the head, by dataset name.
func systemDatasets(t *testing.T, cnxn adbc.Connection) map[string]datasetRow {
	t.Helper()
	rows, err := tryQuery(testContext(t), cnxn, "SELECT name, state, row_count, partitions, generation, hits, source, nodes FROM system.datasets")
	if err != nil {
		t.Fatalf("system.datasets: %v", err)
	}
	out := map[string]datasetRow{}
	for _, r := range rows {
		f := strings.SplitN(r, "|", 8)
		num := func(s string) int64 {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("system.datasets row %q: %v", r, err)
			}
			return n
		}
		row := datasetRow{state: f[1], rows: num(f[2]), partitions: num(f[3]), gen: num(f[4]), hits: num(f[5]), source: f[6]}
		if f[7] != "" {
			row.nodes = strings.Split(f[7], ",")
		}
		out[f[0]] = row
	}
	return out
}

// nodeState reads a node's state from system.nodes.
func nodeState(t *testing.T, cnxn adbc.Connection, id string) string {
	t.Helper()
	rows, err := tryQuery(testContext(t), cnxn, "SELECT state FROM system.nodes WHERE id = '"+id+"'")
	if err != nil {
		t.Fatalf("system.nodes: %v", err)
	}
	if len(rows) != 1 {
		return ""
	}
	return rows[0]
}

// heldPartitions lists, for each node, the partitions of the named dataset generation it holds.
func heldPartitions(c *datasetCluster, name string, gen int64) map[string][]int {
	out := map[string][]int{}
	for _, n := range c.nodes {
		ds, ok := n.eng.MemoryCatalog().Dataset(name)
		if !ok || int64(ds.Generation()) != gen {
			continue
		}
		for i, p := range ds.Parts() {
			if p.Held() {
				out[n.id] = append(out[n.id], i)
			}
		}
	}
	return out
}

// TestDatasetsOnDataNodes runs a head and three data nodes in this process and checks
// materialized datasets end to end through real clients: loading a job spec, reading it where
// it is held, reuse and replacement, CREATE TABLE … AS SELECT and DROP TABLE, errors, and the
// loss of a data node.
func TestDatasetsOnDataNodes(t *testing.T) {
	wh := demoWarehouse(t)
	c := startDatasetCluster(t, wh, 3)
	ctx := testContext(t)
	cnxn := quietConn(t, c.head.addr)
	headFlight := flightClient(t, c.head.addr)
	nodeAddrs := map[string]bool{}
	for _, n := range c.nodes {
		nodeAddrs[n.addr] = true
	}

	spec := engine.DatasetSpec{
		Name: "feats", Table: "demo.rides", Columns: []string{"ride_id", "city", "fare", "f0"},
		Filter: "city IN ('Lisbon', 'Tokyo', 'Amsterdam')", Partitions: 6,
	}
	respec := spec
	respec.Filter, respec.Replace = "city IN ('Berlin', 'Paris') AND passengers >= 2", true
	specSQL, err := spec.Query()
	if err != nil {
		t.Fatal(err)
	}
	respecSQL, err := respec.Query()
	if err != nil {
		t.Fatal(err)
	}
	// What the Iceberg table answers, read before any dataset exists (a query whose plan a
	// dataset holds is answered from the dataset afterwards).
	const (
		filtered   = "SELECT ride_id, fare FROM %s WHERE city = 'Lisbon' AND fare > 10"
		aggregate  = "SELECT city, count(*), sum(fare), min(ride_id) FROM %s GROUP BY city ORDER BY city"
		lisbonCTAS = "SELECT ride_id, fare FROM demo.rides WHERE city = 'Lisbon'"
	)
	wantAll := sortedRows(t, cnxn, specSQL)
	wantFiltered := sortedRows(t, cnxn, fmt.Sprintf(filtered, "("+specSQL+") s"))
	wantAgg, err := tryQuery(ctx, cnxn, fmt.Sprintf(aggregate, "("+specSQL+") s"))
	if err != nil {
		t.Fatal(err)
	}
	wantReplaced := sortedRows(t, cnxn, respecSQL)
	wantLisbon := sortedRows(t, cnxn, lisbonCTAS)
	if len(wantAll) == 0 || len(wantFiltered) == 0 || len(wantAgg) != 3 || len(wantReplaced) == 0 || len(wantLisbon) == 0 {
		t.Fatalf("reference results are empty: %d %d %d %d %d", len(wantAll), len(wantFiltered), len(wantAgg), len(wantReplaced), len(wantLisbon))
	}

	var gen int64
	t.Run("load streams progress and holds the dataset on every node", func(t *testing.T) {
		start := time.Now()
		ds := mustLoad(t, ctx, headFlight, spec)
		t.Logf("loaded %d rows in %d partitions in %s", ds.Rows, ds.Partitions, time.Since(start))
		if ds.Name != "feats" || ds.Reused || ds.Rows != int64(len(wantAll)) || ds.Partitions != 6 || len(ds.Nodes) != 3 {
			t.Errorf("loaded %+v; want %d rows in 6 partitions on 3 nodes", ds, len(wantAll))
		}
		if pin := ds.Snapshot; len(pin) != 1 || !strings.HasPrefix(pin[firstKey(pin)], "@") {
			t.Errorf("snapshot = %v, want the table pinned to its snapshot", pin)
		}
		row, ok := systemDatasets(t, cnxn)["feats"]
		if !ok || row.state != cluster.DatasetReady || row.rows != int64(len(wantAll)) || row.partitions != 6 || len(row.nodes) != 3 {
			t.Fatalf("system.datasets feats = %+v (%v)", row, ok)
		}
		if row.source != "demo.rides" {
			t.Errorf("source = %q", row.source)
		}
		gen = row.gen
		held := heldPartitions(c, "feats", gen)
		var all []int
		for id, parts := range held {
			if len(parts) == 0 {
				t.Errorf("node %s holds nothing", id)
			}
			all = append(all, parts...)
		}
		slices.Sort(all)
		if !slices.Equal(all, []int{0, 1, 2, 3, 4, 5}) || len(held) != 3 {
			t.Errorf("nodes hold partitions %v, want each of 0..5 exactly once over 3 nodes", held)
		}
		// The head holds no rows: every partition is remote.
		headDS, _ := c.head.eng.MemoryCatalog().Dataset("feats")
		for i, p := range headDS.Parts() {
			if p.Held() || !nodeAddrs[p.Location] {
				t.Errorf("head's partition %d is at %q (held here: %v)", i, p.Location, p.Held())
			}
		}
	})

	t.Run("a join of the dataset with an Iceberg table runs on the nodes as the head planned it", func(t *testing.T) {
		// Each node holds some of the partitions; it plans the stage with the head's row count
		// of the whole dataset, so its join choices and scan numbering are the head's.
		const join = "SELECT count(*), sum(f.fare) FROM feats f JOIN demo.rides r ON f.ride_id = r.ride_id WHERE r.passengers > 1"
		want, err := tryQuery(ctx, cnxn, strings.Replace(join, "feats f", "("+specSQL+") f", 1))
		if err != nil {
			t.Fatal(err)
		}
		got, err := tryQuery(ctx, cnxn, join)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", join, got, want)
		}
	})

	t.Run("reads go to the nodes holding the partitions", func(t *testing.T) {
		arrowCl := c.head.arrowClient(t)
		info, err := arrowCl.Execute(ctx, "SELECT * FROM feats")
		if err != nil {
			t.Fatal(err)
		}
		at := map[string]bool{}
		for i, ep := range info.Endpoint {
			if len(ep.Location) != 1 || !nodeAddrs[strings.TrimPrefix(ep.Location[0].Uri, "grpc://")] {
				t.Errorf("endpoint %d at %v, want one data node", i, ep.Location)
				continue
			}
			at[ep.Location[0].Uri] = true
		}
		if len(info.Endpoint) != 3 || len(at) != 3 {
			t.Errorf("%d endpoints at %d nodes, want one at each of the 3 nodes", len(info.Endpoint), len(at))
		}
		if diff := sameRows(sortedRows(t, cnxn, "SELECT * FROM feats"), wantAll); diff != "" {
			t.Errorf("SELECT * FROM feats: %s", diff)
		}
		ids := sortedRows(t, cnxn, "SELECT ride_id FROM feats")
		if len(slices.Compact(slices.Clone(ids))) != len(ids) {
			t.Error("a row was read twice")
		}

		q := fmt.Sprintf(filtered, "feats")
		info, err = arrowCl.Execute(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for i, ep := range info.Endpoint {
			if len(ep.Location) != 1 || !nodeAddrs[strings.TrimPrefix(ep.Location[0].Uri, "grpc://")] {
				t.Errorf("filtered query: endpoint %d at %v", i, ep.Location)
			}
		}
		if len(info.Endpoint) < 2 {
			t.Errorf("filtered query has %d endpoints, want it divided", len(info.Endpoint))
		}
		if diff := sameRows(sortedRows(t, cnxn, q), wantFiltered); diff != "" {
			t.Errorf("%s: %s", q, diff)
		}

		// An aggregate runs on the head, which reads the partitions from the nodes.
		q = fmt.Sprintf(aggregate, "feats")
		info, err = arrowCl.Execute(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Endpoint) != 1 || len(info.Endpoint[0].Location) != 0 {
			t.Errorf("aggregate: %d endpoints, first at %v; want one on the head", len(info.Endpoint), info.Endpoint[0].Location)
		}
		if got, err := tryQuery(ctx, cnxn, q); err != nil || !slices.Equal(got, wantAgg) {
			t.Errorf("%s = %v, %v; want %v", q, got, err, wantAgg)
		}
	})

	t.Run("the same spec reuses the dataset, another one must replace it", func(t *testing.T) {
		before := systemDatasets(t, cnxn)["feats"]
		ds := mustLoad(t, ctx, headFlight, spec)
		if !ds.Reused || ds.Rows != int64(len(wantAll)) {
			t.Errorf("second load = %+v, want reused", ds)
		}
		after := systemDatasets(t, cnxn)["feats"]
		if after.gen != gen || after.hits != before.hits+1 {
			t.Errorf("after reuse: generation %d (was %d), hits %d (were %d)", after.gen, gen, after.hits, before.hits)
		}
		// A query counts one hit, however many stages it is planned in.
		for _, q := range []string{"SELECT count(*) FROM feats", "SELECT city, count(*) FROM feats GROUP BY city"} {
			was := systemDatasets(t, cnxn)["feats"].hits
			if _, err := tryQuery(ctx, cnxn, q); err != nil {
				t.Fatal(err)
			}
			if now := systemDatasets(t, cnxn)["feats"].hits; now != was+1 {
				t.Errorf("%s: hits %d -> %d, want one more", q, was, now)
			}
		}

		other := spec
		other.Filter = respec.Filter
		_, err := loadSpec(ctx, headFlight, other)
		if grpcCode(err) != codes.AlreadyExists || !strings.Contains(err.Error(), "feats") {
			t.Errorf("load of another definition under the name = %v, want AlreadyExists", err)
		}
		if row := systemDatasets(t, cnxn)["feats"]; row.gen != gen || row.rows != int64(len(wantAll)) {
			t.Errorf("a refused load changed the dataset: %+v", row)
		}

		ds = mustLoad(t, ctx, headFlight, respec)
		if ds.Reused || ds.Rows != int64(len(wantReplaced)) {
			t.Errorf("replacing load = %+v, want %d new rows", ds, len(wantReplaced))
		}
		row := systemDatasets(t, cnxn)["feats"]
		if row.gen == gen || row.rows != int64(len(wantReplaced)) || row.state != cluster.DatasetReady {
			t.Fatalf("after replace system.datasets feats = %+v (old generation %d)", row, gen)
		}
		for _, n := range c.nodes {
			if ds, ok := n.eng.MemoryCatalog().Dataset("feats"); ok && int64(ds.Generation()) == gen {
				t.Errorf("node %s still holds the replaced generation", n.id)
			}
		}
		if held := heldPartitions(c, "feats", row.gen); len(held) != 3 {
			t.Errorf("new generation held by %v", held)
		}
		if _, err := tryQuery(ctx, cnxn, fmt.Sprintf("SELECT count(*) FROM `feats@%d`", gen)); grpcCode(err) != codes.NotFound {
			t.Errorf("the replaced generation still resolves: %v", err)
		}
		if diff := sameRows(sortedRows(t, cnxn, "SELECT * FROM feats"), wantReplaced); diff != "" {
			t.Errorf("after replace: %s", diff)
		}
		gen = row.gen
	})

	t.Run("CREATE TABLE AS SELECT over Iceberg makes a dataset, DROP TABLE frees it", func(t *testing.T) {
		if n := adbcUpdate(t, cnxn, "CREATE TABLE lisbon AS "+lisbonCTAS); n != int64(len(wantLisbon)) {
			t.Errorf("CREATE TABLE lisbon AS … affected %d rows, want %d", n, len(wantLisbon))
		}
		row, ok := systemDatasets(t, cnxn)["lisbon"]
		if !ok || row.state != cluster.DatasetReady || row.rows != int64(len(wantLisbon)) || !strings.EqualFold(row.source, lisbonCTAS) {
			t.Fatalf("system.datasets lisbon = %+v (%v)", row, ok)
		}
		if len(heldPartitions(c, "lisbon", row.gen)) == 0 {
			t.Error("no node holds lisbon")
		}
		if diff := sameRows(sortedRows(t, cnxn, "SELECT * FROM lisbon"), wantLisbon); diff != "" {
			t.Errorf("SELECT * FROM lisbon: %s", diff)
		}

		// Over a memory table CREATE TABLE … AS SELECT still makes a memory table.
		adbcUpdate(t, cnxn, "CREATE TABLE src (a BIGINT)")
		adbcUpdate(t, cnxn, "INSERT INTO src VALUES (1), (2), (3)")
		adbcUpdate(t, cnxn, "CREATE TABLE src_copy AS SELECT a * 10 AS a FROM src")
		if _, ok := c.head.eng.MemoryCatalog().Dataset("src_copy"); ok {
			t.Error("src_copy became a dataset")
		}
		if tbl, err := c.head.eng.MemoryCatalog().Table(ctx, "src_copy"); err != nil {
			t.Error(err)
		} else if _, ok := tbl.(*memcat.Table); !ok {
			t.Errorf("src_copy is a %T", tbl)
		}
		if _, ok := systemDatasets(t, cnxn)["src_copy"]; ok {
			t.Error("src_copy is listed in system.datasets")
		}
		if got := sortedRows(t, cnxn, "SELECT a FROM src_copy"); !slices.Equal(got, []string{"10", "20", "30"}) {
			t.Errorf("src_copy = %v", got)
		}

		adbcUpdate(t, cnxn, "DROP TABLE lisbon")
		if _, ok := systemDatasets(t, cnxn)["lisbon"]; ok {
			t.Error("lisbon still listed after DROP TABLE")
		}
		for _, n := range c.nodes {
			if _, ok := n.eng.MemoryCatalog().Dataset("lisbon"); ok {
				t.Errorf("node %s still holds lisbon", n.id)
			}
		}
		if _, err := tryQuery(ctx, cnxn, "SELECT * FROM lisbon"); grpcCode(err) != codes.NotFound {
			t.Errorf("SELECT from a dropped dataset: %v", err)
		}
		// The plan lisbon held is read from Iceberg again.
		if diff := sameRows(sortedRows(t, cnxn, lisbonCTAS), wantLisbon); diff != "" {
			t.Errorf("after DROP: %s", diff)
		}
		adbcUpdate(t, cnxn, "DROP TABLE src_copy")
		adbcUpdate(t, cnxn, "DROP TABLE src")
	})

	// stillServes checks that the cluster answers a query over the dataset after an error.
	stillServes := func(t *testing.T) {
		t.Helper()
		if got, err := tryQuery(ctx, cnxn, "SELECT count(*) FROM feats"); err != nil || len(got) != 1 || got[0] != strconv.Itoa(len(wantReplaced)) {
			t.Errorf("count after the error = %v, %v; want %d", got, err, len(wantReplaced))
		}
	}

	t.Run("errors", func(t *testing.T) {
		_, err := loadSpec(ctx, headFlight, engine.DatasetSpec{Name: "nope", Table: "demo.no_such_table"})
		if grpcCode(err) != codes.NotFound || !strings.Contains(err.Error(), "no_such_table") {
			t.Errorf("unknown table: %v", err)
		}
		stillServes(t)
		_, err = loadSpec(ctx, headFlight, engine.DatasetSpec{Name: "bad", Table: "demo.rides", Filter: "city = = 'x'"})
		if grpcCode(err) != codes.InvalidArgument {
			t.Errorf("malformed filter: %v", err)
		}
		stillServes(t)
		_, err = loadRaw(ctx, headFlight, []byte(`{"name": "bad", "table": "demo.rides", "colums": ["city"]}`))
		if grpcCode(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "colums") {
			t.Errorf("misspelled spec field: %v", err)
		}
		stillServes(t)
		if names, _ := c.head.eng.MemoryCatalog().TableNames(ctx); !slices.Equal(names, []string{"feats"}) {
			t.Errorf("failed loads left %v", names)
		}

		// A data node serves a partition only for a ticket signed with the cluster secret.
		held := heldPartitions(c, "feats", gen)
		var node *dataNode
		var part int
		for _, n := range c.nodes {
			if len(held[n.id]) > 0 {
				node, part = n, held[n.id][0]
				break
			}
		}
		if node == nil {
			var gens []string
			for _, n := range c.nodes {
				if ds, ok := n.eng.MemoryCatalog().Dataset("feats"); ok {
					gens = append(gens, fmt.Sprintf("%s:%d:%v", n.id, ds.Generation(), ds.Parts()))
				}
			}
			t.Fatalf("no node holds feats generation %d: %v; system.datasets %+v", gen, gens, systemDatasets(t, cnxn)["feats"])
		}
		nodeDS, _ := node.eng.MemoryCatalog().Dataset("feats")
		pt := cluster.PartitionTicket{Dataset: "feats", Generation: uint64(gen), Partition: part, Columns: []int{0}, Expires: time.Now().Add(time.Minute)}
		nodeFlight := flightClient(t, node.addr)
		readTicket := func(key *ticket.Keyring) (int64, error) {
			raw, err := cluster.EncodePartitionTicket(key, pt)
			if err != nil {
				t.Fatal(err)
			}
			stream, err := nodeFlight.DoGet(ctx, &flight.Ticket{Ticket: raw})
			if err != nil {
				return 0, err
			}
			rdr, err := flight.NewRecordReader(stream)
			if err != nil {
				return 0, err
			}
			defer rdr.Release()
			var n int64
			for rdr.Next() {
				n += rdr.RecordBatch().NumRows()
			}
			return n, rdr.Err()
		}
		if n, err := readTicket(c.key); err != nil || n != nodeDS.Parts()[part].Rows {
			t.Errorf("partition %d read with a good ticket: %d rows, %v; want %d", part, n, err, nodeDS.Parts()[part].Rows)
		}
		_, err = readTicket(ticket.NewKeyring([]byte("forged"), nil))
		if grpcCode(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "not issued") {
			t.Errorf("forged partition ticket: %v", err)
		}
		stillServes(t)

		// A head with no data node alive cannot hold a dataset.
		lonely := cluster.NewMembership(cluster.Config{})
		mem := memcat.NewCatalog("cachedb")
		reg := cluster.NewDatasets(cluster.DatasetsConfig{Membership: lonely, Catalog: mem, Key: c.key, Logger: quietLogger})
		t.Cleanup(reg.Close)
		eng, err := engine.New(engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake", Memory: mem, Datasets: reg})
		if err != nil {
			t.Fatal(err)
		}
		_, addr, _ := serveEngine(t, eng, Options{TicketKey: c.key, Node: newRuntime(t, eng, c.key), DataNodes: func() []string { return aliveAddrs(lonely) }, Extend: cluster.NewActions(lonely, c.key).Wrap})
		_, err = loadSpec(ctx, flightClient(t, addr), spec)
		if grpcCode(err) != codes.Unavailable || !strings.Contains(err.Error(), "no data node") {
			t.Errorf("load with no data node alive: %v", err)
		}
		if len(reg.List()) != 0 || len(eng.MemoryCatalog().Datasets()) != 0 {
			t.Error("a load with no data node left a dataset")
		}
		lonelyCnxn := quietConn(t, addr)
		if got, err := tryQuery(ctx, lonelyCnxn, "SELECT count(*) FROM demo.rides"); err != nil || len(got) != 1 || got[0] != strconv.Itoa(demo.RidesRows) {
			t.Errorf("query on the head without nodes = %v, %v", got, err)
		}
	})

	t.Run("a node registering again while a dataset is made", func(t *testing.T) {
		// A node that registers again as a new process restarted empty: what it made is made
		// again elsewhere, and calls in flight to its address are not cut off.
		churn := c.nodes[0]
		stop := make(chan struct{})
		churned := make(chan int)
		go func() {
			n := 0
			defer func() { churned <- n }()
			for {
				select {
				case <-stop:
					return
				case <-time.After(3 * time.Millisecond):
				}
				if _, err := c.members.Register(churn.id, churn.addr, fmt.Sprintf("churn-%d", n)); err != nil {
					t.Error(err)
					return
				}
				n++
			}
		}()
		msgs, err := loadSpec(ctx, headFlight, engine.DatasetSpec{Name: "churn", Table: "demo.rides", Columns: []string{"ride_id"}, Partitions: 6})
		close(stop)
		t.Logf("%s registered again %d times during the load", churn.id, <-churned)
		ds := loaded(t, msgs, err)
		if ds.Rows != demo.RidesRows {
			t.Errorf("churn holds %d rows, want %d", ds.Rows, demo.RidesRows)
		}
		waitFor(t, "churn and feats to be ready", func() bool {
			rows := systemDatasets(t, cnxn)
			return rows["churn"].state == cluster.DatasetReady && rows["feats"].state == cluster.DatasetReady
		})
		want := strconv.Itoa(demo.RidesRows)
		if got, err := tryQuery(ctx, cnxn, "SELECT count(*), count(DISTINCT ride_id) FROM churn"); err != nil || len(got) != 1 || got[0] != want+"|"+want {
			t.Errorf("churn read back %v, %v; want %s distinct rows", got, err, want)
		}
		if got := sortedRows(t, cnxn, "SELECT ride_id FROM churn"); len(got) != demo.RidesRows || len(slices.Compact(got)) != demo.RidesRows {
			t.Errorf("divided read of churn: %d rows", len(got))
		}
		adbcUpdate(t, cnxn, "DROP TABLE churn")
	})

	t.Run("a suspect node keeps its partitions and still serves them", func(t *testing.T) {
		slow := c.nodes[2]
		before := systemDatasets(t, cnxn)["feats"]
		held := heldPartitions(c, "feats", gen)
		if len(held[slow.id]) == 0 {
			t.Fatalf("%s holds no partition of feats: %v", slow.id, held)
		}
		// A dataset on every node is read where it is held, an endpoint per node. (feats may
		// no longer be on every node after the churn above; a query over a dataset that some
		// node lacks runs on the head, which still reads every partition where it is held.)
		spread := mustLoad(t, ctx, headFlight, engine.DatasetSpec{Name: "spread", Table: "demo.rides", Columns: []string{"ride_id"}, Partitions: 6})
		if len(spread.Nodes) != len(c.nodes) {
			t.Fatalf("spread is on %v, want every node", spread.Nodes)
		}
		slow.pause()
		waitFor(t, slow.id+" to be suspect", func() bool { return nodeState(t, cnxn, slow.id) == string(cluster.StateSuspect) })

		// Reads of its partitions still go to it.
		info, err := c.head.arrowClient(t).Execute(ctx, "SELECT * FROM spread")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(info.Endpoint, func(ep *flight.FlightEndpoint) bool {
			return len(ep.Location) == 1 && ep.Location[0].Uri == "grpc://"+slow.addr
		}) {
			t.Errorf("no endpoint of spread at the suspect node %s", slow.id)
		}
		if got := sortedRows(t, cnxn, "SELECT ride_id FROM spread"); len(got) != demo.RidesRows {
			t.Errorf("spread read %d rows while %s is suspect, want %d", len(got), slow.id, demo.RidesRows)
		}
		adbcUpdate(t, cnxn, "DROP TABLE spread")
		if diff := sameRows(sortedRows(t, cnxn, "SELECT * FROM feats"), wantReplaced); diff != "" {
			t.Errorf("read while %s is suspect: %s", slow.id, diff)
		}
		// New partitions avoid it.
		ds := mustLoad(t, ctx, headFlight, engine.DatasetSpec{Name: "avoid", Table: "demo.rides", Columns: []string{"ride_id"}, Partitions: 4})
		if slices.Contains(ds.Nodes, slow.id) || len(ds.Nodes) == 0 {
			t.Errorf("a dataset made while %s is suspect is on %v", slow.id, ds.Nodes)
		}
		adbcUpdate(t, cnxn, "DROP TABLE avoid")

		// Heard again, it is alive and holds what it held: nothing was made again.
		slow.resume()
		waitFor(t, slow.id+" to be alive again", func() bool { return nodeState(t, cnxn, slow.id) == string(cluster.StateAlive) })
		after := systemDatasets(t, cnxn)["feats"]
		if after.gen != before.gen || after.state != cluster.DatasetReady || !slices.Equal(after.nodes, before.nodes) {
			t.Errorf("feats after %s recovered = %+v, was %+v", slow.id, after, before)
		}
		if now := heldPartitions(c, "feats", gen); !slices.Equal(now[slow.id], held[slow.id]) {
			t.Errorf("%s holds %v after it recovered, held %v", slow.id, now[slow.id], held[slow.id])
		}
		c.eventsMu.Lock()
		events := strings.Join(c.events, "; ")
		c.eventsMu.Unlock()
		if strings.Contains(events, "lost "+slow.id) {
			t.Errorf("%s was lost while only paused: %s", slow.id, events)
		}
	})

	t.Run("a lost node's partitions are made again on the others", func(t *testing.T) {
		held := heldPartitions(c, "feats", gen)
		victim := c.nodes[1]
		if len(held[victim.id]) == 0 {
			t.Fatalf("%s holds no partition of feats: %v", victim.id, held)
		}
		victim.stop()

		// Until the head has made the lost partitions again, a read either fails as
		// retryable or returns the whole dataset; never other rows.
		unavailable, complete := 0, 0
		head := c.head.arrowClient(t)
		clients := map[string]*flightsqlClient{}
		t.Cleanup(func() {
			for _, cl := range clients {
				cl.Close()
			}
		})
		waitFor(t, "the dataset to be rebuilt on the survivors", func() bool {
			rows, err := readEndpoints(ctx, head, clients, "SELECT * FROM feats")
			switch {
			case err != nil && grpcCode(err) != codes.Unavailable:
				t.Fatalf("read during the loss failed with %v, want Unavailable: %v", grpcCode(err), err)
			case err != nil:
				unavailable++
			default:
				if diff := sameRows(rows, wantReplaced); diff != "" {
					t.Fatalf("read during the loss: %s", diff)
				}
				complete++
			}
			row := systemDatasets(t, cnxn)["feats"]
			return nodeState(t, cnxn, victim.id) == string(cluster.StateLost) && row.state == cluster.DatasetReady &&
				len(row.nodes) == 2 && !slices.Contains(row.nodes, victim.id)
		})
		t.Logf("during the loss: %d reads unavailable, %d complete", unavailable, complete)

		row := systemDatasets(t, cnxn)["feats"]
		if row.gen != gen || row.rows != int64(len(wantReplaced)) || slices.Contains(row.nodes, victim.id) {
			t.Errorf("after rebuild system.datasets feats = %+v", row)
		}
		var all []int
		for id, parts := range heldPartitions(c, "feats", gen) {
			if id != victim.id {
				all = append(all, parts...)
			}
		}
		// A node that registered again may keep copies of partitions made again elsewhere.
		slices.Sort(all)
		if all = slices.Compact(all); !slices.Equal(all, []int{0, 1, 2, 3, 4, 5}) {
			t.Errorf("survivors hold partitions %v, want each of 0..5", all)
		}
		if diff := sameRows(sortedRows(t, cnxn, "SELECT * FROM feats"), wantReplaced); diff != "" {
			t.Errorf("after rebuild: %s", diff)
		}
		info, err := c.head.arrowClient(t).Execute(ctx, "SELECT * FROM feats")
		if err != nil {
			t.Fatal(err)
		}
		for i, ep := range info.Endpoint {
			if len(ep.Location) != 1 || ep.Location[0].Uri == "grpc://"+victim.addr || !nodeAddrs[strings.TrimPrefix(ep.Location[0].Uri, "grpc://")] {
				t.Errorf("endpoint %d at %v after the loss", i, ep.Location)
			}
		}
		// The head's own reads (an aggregate) fetch the rebuilt partitions too.
		wantCount := strconv.Itoa(len(wantReplaced))
		if got, err := tryQuery(ctx, cnxn, "SELECT count(*), count(DISTINCT ride_id) FROM feats"); err != nil || len(got) != 1 || got[0] != wantCount+"|"+wantCount {
			t.Errorf("aggregate after rebuild = %v, %v; want %s distinct rows", got, err, wantCount)
		}
	})
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

// TestCreateTableAsSelectWithoutDataNodesMakesAMemoryTable: a head whose cluster has no data
// node yet answers CREATE TABLE … AS SELECT over an Iceberg table with a memory table on the
// head (as a server without a cluster does), not with an error that no node can hold it.
func TestCreateTableAsSelectWithoutDataNodesMakesAMemoryTable(t *testing.T) {
	wh := demoWarehouse(t)
	c := startDatasetCluster(t, wh, 0)
	cnxn := quietConn(t, c.head.addr)
	const query = "SELECT ride_id, fare FROM demo.rides WHERE city = 'Lisbon'"
	want := sortedRows(t, cnxn, query)
	if n := adbcUpdate(t, cnxn, "CREATE TABLE lisbon AS "+query); n != int64(len(want)) {
		t.Errorf("CREATE TABLE lisbon AS … affected %d rows, want %d", n, len(want))
	}
	if _, ok := c.head.eng.MemoryCatalog().Dataset("lisbon"); ok {
		t.Error("lisbon became a dataset")
	}
	if _, ok := systemDatasets(t, cnxn)["lisbon"]; ok {
		t.Error("lisbon is listed in system.datasets")
	}
	if diff := sameRows(sortedRows(t, cnxn, "SELECT * FROM lisbon"), want); diff != "" {
		t.Errorf("SELECT * FROM lisbon: %s", diff)
	}
}
