package flightsql

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg"
	"github.com/cachedb/cachedb/catalog/iceberg/icebergtest"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/rpcerr"
	"github.com/cachedb/cachedb/internal/sqlgen"
)

// randomizedClusterChecks is how many oracle checks run over each random schema.
const randomizedClusterChecks = 60

// `make randomized-long` sets these; `go test` runs four fixed seeds.
var (
	randomizedSeed     = flag.Int64("randomized.seed", 0, "first seed of TestRandomizedOnDataNodes (0: the fixed seeds)")
	randomizedDuration = flag.Duration("randomized.duration", 0, "run TestRandomizedOnDataNodes over consecutive seeds this long")
)

// TestRandomizedOnDataNodes runs the randomized oracles of internal/sqlgen (TLP, NoREC,
// ORDER BY/LIMIT slicing, rewrites) against a head with two data nodes, over random tables
// written to Iceberg, so that the queries are cut into stages that scan on the nodes and
// shuffle between them; every query is also compared with a single-process engine holding the
// same rows as memory tables (one partition, no pushdown). The engine's own randomized test
// covers the single-process planner; this one covers distribution: placement, partial and
// final aggregates, shuffled joins, gathers.
func TestRandomizedOnDataNodes(t *testing.T) {
	var total sqlgen.Stats
	seeds := []int64{101, 102, 103, 104}
	var deadline time.Time
	if *randomizedSeed != 0 || *randomizedDuration > 0 {
		first := *randomizedSeed
		if first == 0 {
			first = time.Now().UnixNano() % 1_000_000
		}
		seeds, deadline = []int64{first}, time.Now().Add(*randomizedDuration)
	}
	failures := 0
	for i := 0; (i < len(seeds) || time.Now().Before(deadline)) && failures < 10; i++ {
		seed := seeds[min(i, len(seeds)-1)] + int64(max(0, i-len(seeds)+1))
		// A subtest per seed, so that its servers stop before the next seed starts its own.
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			st, err := runRandomizedClusterSeed(t, seed)
			total.Checks += st.Checks
			total.Queries += st.Queries
			total.Skipped += st.Skipped
			if err != nil {
				failures++
				t.Errorf("seed %d: %v", seed, err)
			}
		})
	}
	t.Logf("%d checks, %d queries (%d with their final stage on the data nodes), %d abandoned on a user-facing error",
		total.Checks, total.Queries, onNodes.Load(), total.Skipped)
	if total.Checks == 0 || onNodes.Load() == 0 {
		t.Fatalf("no check ran on the data nodes: %+v", total)
	}
}

func runRandomizedClusterSeed(t *testing.T, seed int64) (sqlgen.Stats, error) {
	ctx := context.Background()
	r := rand.New(rand.NewSource(seed))
	schema := sqlgen.RandomSchema(r)
	twin, err := engine.New(engine.Config{NoDemo: true, Partitions: 1, NoPushdown: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range schema.Statements() {
		if _, err := twin.Execute(ctx, s, nil); err != nil {
			t.Fatalf("seed %d: %s: %v", seed, s, err)
		}
	}
	// The same rows as Iceberg tables: one catalog, one table per random table.
	dir := t.TempDir()
	var cfg iceberg.Config
	for _, tbl := range schema.Tables {
		res, err := twin.Execute(ctx, "SELECT * FROM "+tbl.Name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg, err = icebergtest.WriteReader(ctx, dir, "lake", "rnd", tbl.Name, res.Reader); err != nil {
			t.Fatalf("seed %d: writing %s to Iceberg: %v", seed, tbl.Name, err)
		}
	}

	var nodes []string
	newEngine := func(dataNodes func() int) *engine.Engine {
		lake, err := iceberg.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		eng, err := engine.New(engine.Config{
			NoDemo: true, BatchSize: 1 + r.Intn(4), Partitions: 2 + r.Intn(2),
			Sources: []catalog.Catalog{lake}, DefaultCatalog: "lake", DataNodes: dataNodes,
		})
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}
	clients := map[string]*flightsql.Client{}
	for i := range 2 {
		eng := newEngine(nil)
		rt := newRuntime(t, eng, fuzzKey)
		actions := cluster.NodeConfig{ID: fmt.Sprintf("n%d", i), Version: "test", Key: fuzzKey, Store: rt, Shuffles: rt}
		addr := serveFuzz(t, eng, Options{TicketKey: fuzzKey, Node: rt, Extend: cluster.NodeActions(actions)})
		nodes = append(nodes, addr)
	}
	headEng := newEngine(func() int { return len(nodes) })
	head := serveFuzz(t, headEng, Options{TicketKey: fuzzKey, Node: newRuntime(t, headEng, fuzzKey), DataNodes: func() []string { return nodes }})
	headClient := dialFlightSQL(t, head)
	t.Cleanup(func() { headClient.Close() })
	for _, n := range nodes {
		cl := dialFlightSQL(t, n)
		t.Cleanup(func() { cl.Close() })
		clients["grpc://"+n] = cl
	}

	c := &sqlgen.Checker{
		Run:  func(sql string) ([]string, error) { return runOnCluster(ctx, headClient, clients, sql) },
		Twin: func(sql string) ([]string, error) { return runQueryOn(ctx, twin, sql) },
	}
	g := sqlgen.NewGen(r, schema)
	for range randomizedClusterChecks {
		if f := c.Check(g); f != nil {
			return c.Stats, fmt.Errorf("%v\nschema:\n  %s", f, strings.Join(schema.Statements(), ";\n  "))
		}
	}
	return c.Stats, nil
}

// onNodes counts the queries whose final stage ran on the data nodes (endpoints located there).
var onNodes atomic.Int64

// runOnCluster runs sql on the head and reads every endpoint where it is located, in order;
// errors come back in the engine's categories, as a client across the wire sees them.
func runOnCluster(ctx context.Context, head *flightsql.Client, nodes map[string]*flightsql.Client, sql string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	info, err := head.Execute(ctx, sql)
	if err != nil {
		return nil, rpcerr.FromStatus(err)
	}
	var rows []string
	if len(info.Endpoint) > 0 && len(info.Endpoint[0].Location) > 0 {
		onNodes.Add(1)
	}
	for _, ep := range info.Endpoint {
		cl := head
		if len(ep.Location) > 0 {
			if cl = nodes[ep.Location[0].GetUri()]; cl == nil {
				return nil, fmt.Errorf("endpoint at unknown location %s", ep.Location[0].GetUri())
			}
		}
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			return nil, rpcerr.FromStatus(err)
		}
		part, err := sqlgen.Render(rdr)
		rdr.Release()
		if err != nil {
			return nil, rpcerr.FromStatus(err)
		}
		rows = append(rows, part...)
	}
	return rows, nil
}

// runQueryOn runs sql on eng to the end.
func runQueryOn(ctx context.Context, eng *engine.Engine, sql string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := eng.Execute(ctx, sql, nil)
	if err != nil {
		return nil, err
	}
	defer res.Reader.Release()
	return sqlgen.Render(res.Reader)
}
