package flightsql

import (
	"slices"
	"testing"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/node"
)

// startBoundedDataNode is startDataNode whose shuffle producers hold at most bucketBytes per
// bucket before they wait for readers.
func startBoundedDataNode(t *testing.T, cfg engine.Config, key *ticket.Keyring, bucketBytes int64) *testServer {
	t.Helper()
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := node.New(node.Config{Engine: eng, Shuffles: cluster.NewShuffles(key), ShuffleBucketBytes: bucketBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	actions := cluster.NodeConfig{ID: "node", Version: "test", Key: key, Store: rt, Shuffles: rt}
	srv, addr, _ := serveEngine(t, eng, Options{TicketKey: key, Node: rt, Extend: cluster.NodeActions(actions)})
	return &testServer{srv: srv, eng: eng, node: rt, addr: addr}
}

// TestShuffleJoinsUnderATinyBucketBound: with every shuffle bucket bounded to one byte (one
// batch), distributed joins and aggregates give a server's answers whether the client reads the
// endpoints concurrently (ADBC) or one after another to the end (where a producer that waited
// on a bucket nobody reads yet would deadlock the query), and leave nothing reserved.
func TestShuffleJoinsUnderATinyBucketBound(t *testing.T) {
	wh := demoWarehouse(t)
	newEngineConfig := func() engine.Config {
		return engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake"}
	}
	key := ticket.NewKeyring([]byte("cluster secret"), nil)
	var nodes []string
	var procs []*testServer
	for range 3 {
		n := startBoundedDataNode(t, newEngineConfig(), key, 1)
		procs = append(procs, n)
		nodes = append(nodes, n.addr)
	}
	headCfg := newEngineConfig()
	headCfg.DataNodes = func() int { return len(nodes) }
	head := startServer(t, headCfg, Options{TicketKey: key, DataNodes: func() []string { return nodes }})
	alone := startServer(t, newEngineConfig(), Options{})
	procs = append(procs, head)

	ctx := testContext(t)
	headConn, aloneConn := head.sessionConn(t), alone.sessionConn(t)
	cl := head.arrowClient(t)
	clients := map[string]*flightsqlClient{}
	t.Cleanup(func() {
		for _, c := range clients {
			c.Close()
		}
	})
	for _, query := range []string{
		"SELECT a.ride_id, b.city FROM demo.rides a JOIN demo.rides b ON a.ride_id = b.ride_id + 7 WHERE a.ride_id < 20000",
		"SELECT city, passengers, count(*) FROM demo.rides GROUP BY city, passengers",
		"SELECT a.city, count(*) FROM demo.rides a JOIN demo.rides b ON a.ride_id = b.ride_id + 1 GROUP BY a.city",
	} {
		_, want := adbcQuery(t, aloneConn, query)
		slices.Sort(want)
		if len(want) == 0 {
			t.Fatalf("%s: the reference answer is empty", query)
		}
		_, concurrent := adbcQuery(t, headConn, query)
		slices.Sort(concurrent)
		if !slices.Equal(concurrent, want) {
			t.Errorf("%s read concurrently: %d rows, want %d", query, len(concurrent), len(want))
		}
		var inSequence []string
		err := retryUnavailable(t, func() (err error) {
			inSequence, err = readEndpoints(ctx, cl, clients, query)
			return err
		})
		if err != nil {
			t.Fatalf("%s read in sequence: %v", query, err)
		}
		if len(inSequence) != len(want) {
			t.Errorf("%s read in sequence: %d rows, want %d", query, len(inSequence), len(want))
		}
	}
	pollUntil(t, "no process holds shuffle buffers or producers", func() bool {
		for _, p := range procs {
			if p.eng.Pool().Stats().Reserved != 0 || p.node.Stages().Producers != 0 {
				return false
			}
		}
		return true
	})
}
