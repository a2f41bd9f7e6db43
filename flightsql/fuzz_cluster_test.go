package flightsql

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg"
	"github.com/cachedb/cachedb/catalog/iceberg/icebergtest"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/node"
)

// fuzzCluster is a head with two data nodes on loopback ports, all reading the Iceberg table
// lake.fz.ir (fuzzTables' r written to Iceberg); the head also holds r in memory.
type fuzzCluster struct {
	head    *flightsql.Client
	clients map[string]*flightsql.Client // by data node address
}

// serveFuzz serves eng on a loopback port until the fuzz test ends.
func serveFuzz(tb testing.TB, eng *engine.Engine, opts Options) string {
	tb.Helper()
	opts.Logger = quietLogger
	srv := NewServer(eng, opts)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return lis.Addr().String()
}

func newFuzzCluster(tb testing.TB) *fuzzCluster {
	tb.Helper()
	ctx := context.Background()
	src := newFuzzServer(tb).eng
	res, err := src.Execute(ctx, "SELECT * FROM r", nil)
	if err != nil {
		tb.Fatal(err)
	}
	cfg, err := icebergtest.WriteReader(ctx, tb.TempDir(), "lake", "fz", "ir", res.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	var nodes []string
	// newProcess is an engine with its node runtime; a head's engine counts the data nodes.
	newProcess := func(dataNodes func() int) (*engine.Engine, *node.Runtime) {
		lake, err := iceberg.Open(ctx, cfg)
		if err != nil {
			tb.Fatal(err)
		}
		eng, err := engine.New(engine.Config{NoDemo: true, BatchSize: 2, Sources: []catalog.Catalog{lake}, DataNodes: dataNodes})
		if err != nil {
			tb.Fatal(err)
		}
		return eng, newRuntime(tb, eng, fuzzKey)
	}
	c := &fuzzCluster{clients: map[string]*flightsql.Client{}}
	for i := range 2 {
		eng, rt := newProcess(nil)
		actions := cluster.NodeConfig{ID: string(rune('a' + i)), Version: "test", Key: fuzzKey, Store: rt, Shuffles: rt}
		nodes = append(nodes, serveFuzz(tb, eng, Options{TicketKey: fuzzKey, Node: rt, Extend: cluster.NodeActions(actions)}))
	}
	headEng, headRT := newProcess(func() int { return len(nodes) })
	for _, s := range fuzzTables {
		if _, err := headEng.Execute(ctx, s, nil); err != nil {
			tb.Fatal(err)
		}
	}
	head := serveFuzz(tb, headEng, Options{TicketKey: fuzzKey, Node: headRT, DataNodes: func() []string { return nodes }, MaxConcurrentPerClient: 1 << 20})
	dial := func(addr string) *flightsql.Client {
		cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { cl.Close() })
		return cl
	}
	c.head = dial(head)
	for _, n := range nodes {
		c.clients["grpc://"+n] = dial(n)
	}
	return c
}

// query runs sql on the head and reads a bounded part of every endpoint, at the data node it
// is located at.
func (c *fuzzCluster) query(ctx context.Context, t *testing.T, sql string) {
	info, err := c.head.Execute(ctx, sql)
	if noPanic(t, "Execute", err); err != nil {
		return
	}
	for _, ep := range info.Endpoint {
		cl := c.head
		if len(ep.Location) > 0 {
			if cl = c.clients[ep.Location[0].GetUri()]; cl == nil {
				continue
			}
		}
		noPanic(t, "DoGet", readBounded(ctx, cl, ep.Ticket))
	}
}

// readBounded reads at most 1000 batches of ticket's stream and returns its error.
func readBounded(ctx context.Context, cl *flightsql.Client, ticket *flight.Ticket) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rdr, err := cl.DoGet(ctx, ticket)
	if err != nil {
		return err
	}
	defer rdr.Release()
	for n := 0; n < 1000 && rdr.Next(); n++ {
	}
	return rdr.Err()
}

// FuzzDistributedSQL runs arbitrary statements on a head with two data nodes, where queries
// over the Iceberg table are cut into stages that shuffle between the nodes. Errors are fine;
// panics (in any of the three servers, which share this process) and hangs are not.
func FuzzDistributedSQL(f *testing.F) {
	seeds := []string{
		"SELECT * FROM lake.ir ORDER BY id",
		"SELECT s, count(*), sum(m), min(dt), max(n) FROM lake.ir GROUP BY s",
		"SELECT DISTINCT s FROM lake.ir",
		"SELECT count(DISTINCT n), avg(d) FROM lake.ir",
		"SELECT a.id, b.s FROM lake.ir a JOIN lake.ir b ON a.s = b.s WHERE a.id > b.id",
		"SELECT a.id FROM lake.ir a LEFT JOIN r b ON a.id = b.id",
		"SELECT id FROM lake.ir WHERE n IN (SELECT n FROM lake.ir WHERE m > 0)",
		"SELECT s FROM lake.ir UNION SELECT s FROM r",
		"SELECT id, n FROM lake.ir ORDER BY n DESC LIMIT 2 OFFSET 1",
		"SELECT s, count(*) FROM lake.ir GROUP BY s HAVING count(*) > 1 ORDER BY 2 DESC LIMIT 18446744073709551615",
	}
	seeds = append(seeds, fuzzSQL...)
	for _, s := range seeds {
		f.Add(s)
	}
	c := newFuzzCluster(f)
	f.Fuzz(func(t *testing.T, sql string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.query(ctx, t, sql)
	})
}
