package flightsql

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
)

// startLakeCluster starts a head with three data nodes over the demo warehouse's Iceberg
// catalog "lake", and a server alone over the same catalog, for reference answers.
func startLakeCluster(t *testing.T) (head, alone *testServer, nodes []string) {
	t.Helper()
	return startLakeClusterOf(t, 3)
}

// startLakeClusterOf is startLakeCluster with n data nodes.
func startLakeClusterOf(t *testing.T, n int) (head, alone *testServer, nodes []string) {
	t.Helper()
	wh := demoWarehouse(t)
	newEngineConfig := func() engine.Config {
		return engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake"}
	}
	key := ticket.NewKeyring([]byte("cluster secret"), nil)
	for range n {
		nodes = append(nodes, startDataNode(t, newEngineConfig(), key).addr)
	}
	headCfg := newEngineConfig()
	headCfg.DataNodes = func() int { return len(nodes) }
	head = startServer(t, headCfg, Options{TicketKey: key, DataNodes: func() []string { return nodes }})
	alone = startServer(t, newEngineConfig(), Options{})
	return head, alone, nodes
}

// TestDistributedQueriesMatchOneProcess runs aggregates, DISTINCT, joins, unions, sorts and
// subqueries over an Iceberg table on a head with three data nodes, where they are cut into
// stages at shuffles, and compares every answer with the same query run by a server alone.
func TestDistributedQueriesMatchOneProcess(t *testing.T) {
	ctx := context.Background()
	head, alone, nodes := startLakeCluster(t)

	tests := []struct {
		query string
		// endpoints is how many endpoints the answer has: one per node when the final stage runs
		// there, one (the head) when a sort or a global aggregate needs one place.
		endpoints int
	}{
		{"SELECT city, count(*), sum(fare), min(ride_id), max(ride_id), round(avg(distance_km), 6) FROM demo.rides GROUP BY city", 3},
		{"SELECT city, passengers, count(*) FROM demo.rides WHERE distance_km > 5 GROUP BY city, passengers", 3},
		{"SELECT passengers % 2, count(*) FROM demo.rides GROUP BY passengers % 2", 3},
		{"SELECT count(*), sum(fare), round(avg(distance_km), 6), min(pickup_at) FROM demo.rides", 1},
		{"SELECT DISTINCT city FROM demo.rides", 3},
		{"SELECT DISTINCT passengers, label FROM demo.rides WHERE city = 'Lisbon'", 3},
		{"SELECT city, count(DISTINCT passengers) FROM demo.rides GROUP BY city", 3},
		{"SELECT count(DISTINCT city) FROM demo.rides", 1},
		{"SELECT city, count(*) AS n FROM demo.rides GROUP BY city HAVING count(*) > 20000 ORDER BY n DESC LIMIT 3", 1},
		{"SELECT ride_id, fare FROM demo.rides ORDER BY fare DESC, ride_id LIMIT 5", 1},
		{"SELECT a.city, count(*) FROM demo.rides a JOIN demo.rides b ON a.ride_id = b.ride_id + 1 WHERE a.passengers = 2 GROUP BY a.city", 3},
		{"SELECT a.ride_id, b.city FROM demo.rides a JOIN demo.rides b ON a.ride_id = b.ride_id + 7 AND a.city <> b.city WHERE a.ride_id < 5000", 3},
		{"SELECT count(*), count(b.ride_id) FROM demo.rides a LEFT JOIN (SELECT ride_id FROM demo.rides WHERE label = 1) b ON a.ride_id = b.ride_id", 1},
		{"SELECT count(*) FROM demo.rides WHERE ride_id IN (SELECT ride_id FROM demo.rides WHERE tip > 5)", 1},
		{"SELECT count(*) FROM demo.rides WHERE passengers NOT IN (SELECT passengers FROM demo.rides WHERE city = 'Lisbon' AND passengers > 3)", 1},
		{"SELECT city FROM demo.rides WHERE ride_id < 100 UNION SELECT city FROM demo.rides WHERE ride_id > 199900", 1},
		{"SELECT count(*) FROM demo.rides WHERE fare > (SELECT avg(fare) FROM demo.rides)", 1},
		{"SELECT count(*) FROM demo.rides WHERE passengers > ALL (SELECT passengers FROM demo.rides WHERE city = 'Lisbon' AND passengers < 3)", 1},
		{"SELECT city, sum(fare) FROM demo.rides WHERE ride_id BETWEEN 1000 AND 1200 GROUP BY city ORDER BY city", 1},
	}
	headConn, aloneConn := head.sessionConn(t), alone.sessionConn(t)
	cl := head.arrowClient(t)
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			info, err := cl.Execute(ctx, tt.query)
			if err != nil {
				t.Fatal(err)
			}
			if len(info.Endpoint) != tt.endpoints {
				t.Errorf("%d endpoints, want %d", len(info.Endpoint), tt.endpoints)
			}
			if tt.endpoints > 1 {
				for i, ep := range info.Endpoint {
					if len(ep.Location) != 1 || ep.Location[0].Uri != "grpc://"+nodes[i] {
						t.Errorf("endpoint %d at %v, want data node %s", i, ep.Location, nodes[i])
					}
				}
			}
			_, got := adbcQuery(t, headConn, tt.query)
			_, want := adbcQuery(t, aloneConn, tt.query)
			if !strings.Contains(tt.query, "ORDER BY") {
				slices.Sort(got)
				slices.Sort(want)
			}
			if len(want) == 0 {
				t.Fatal("the reference answer is empty: the query tests nothing")
			}
			if !slices.Equal(got, want) {
				t.Errorf("distributed answer differs: %d rows, want %d\n got %.300v\nwant %.300v", len(got), len(want), got, want)
			}
		})
	}
}

// TestDistributedQueriesWhenTheFilterPrunesEveryFile: a pushed-down filter no file can match
// leaves a distributed scan without tasks; the data nodes agree that nobody reads it, and the
// answers are those of a server alone (one row for an ungrouped aggregate, none otherwise).
func TestDistributedQueriesWhenTheFilterPrunesEveryFile(t *testing.T) {
	head, alone, _ := startLakeCluster(t)
	headConn, aloneConn := head.sessionConn(t), alone.sessionConn(t)
	for _, tt := range []struct {
		query string
		rows  int
	}{
		{"SELECT count(*), sum(fare) FROM demo.rides WHERE ride_id > 100000000", 1},
		{"SELECT city FROM demo.rides WHERE ride_id > 100000000 ORDER BY city", 0},
		{"SELECT city, count(*) FROM demo.rides WHERE ride_id > 100000000 GROUP BY city", 0},
		{"SELECT DISTINCT city FROM demo.rides WHERE ride_id > 100000000", 0},
		{"SELECT ride_id FROM demo.rides WHERE ride_id > 100000000", 0},
		{"SELECT a.city, count(*) FROM demo.rides a JOIN demo.rides b ON a.ride_id = b.ride_id WHERE a.ride_id > 100000000 GROUP BY a.city", 0},
	} {
		t.Run(tt.query, func(t *testing.T) {
			_, got := adbcQuery(t, headConn, tt.query)
			_, want := adbcQuery(t, aloneConn, tt.query)
			if len(want) != tt.rows {
				t.Fatalf("the reference answer has %d rows, want %d", len(want), tt.rows)
			}
			if !slices.Equal(got, want) {
				t.Errorf("distributed answer %q, want %q", got, want)
			}
		})
	}
}

// TestQueriesThroughViewsRunOnTheHead: data nodes plan the SQL text and do not have the head's
// views, so a query naming a view of an Iceberg table runs on the head, with the same answer.
func TestQueriesThroughViewsRunOnTheHead(t *testing.T) {
	ctx := context.Background()
	wh := demoWarehouse(t)
	cfg := engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake"}
	key := ticket.NewKeyring([]byte("cluster secret"), nil)
	nodes := []string{startDataNode(t, cfg, key).addr, startDataNode(t, cfg, key).addr}
	head := startServer(t, cfg, Options{TicketKey: key, DataNodes: func() []string { return nodes }})
	alone := startServer(t, cfg, Options{})
	const view = "CREATE VIEW lisbon AS SELECT ride_id, passengers, fare FROM demo.rides WHERE city = 'Lisbon'"
	const query = "SELECT passengers, count(*), sum(fare) FROM lisbon GROUP BY passengers"
	headConn, aloneConn := head.sessionConn(t), alone.sessionConn(t)
	for _, c := range []adbc.Connection{headConn, aloneConn} {
		if _, err := firstValue(t, c, view); err != nil && !strings.Contains(err.Error(), "no rows") {
			t.Logf("create view: %v", err)
		}
	}
	info, err := head.arrowClient(t).Execute(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 1 || len(info.Endpoint[0].Location) != 0 {
		t.Errorf("a query through a view has %d endpoints (%v), want one at the head", len(info.Endpoint), info.Endpoint)
	}
	_, got := adbcQuery(t, headConn, query)
	_, want := adbcQuery(t, aloneConn, query)
	slices.Sort(got)
	slices.Sort(want)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("through the view: %v, want %v", got, want)
	}
}

// TestExplainShowsDistributedPlan: EXPLAIN on a head with data nodes shows the stages.
func TestExplainShowsDistributedPlan(t *testing.T) {
	wh := demoWarehouse(t)
	head := startServer(t, engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake", DataNodes: func() int { return 3 }}, Options{})
	_, rows := adbcQuery(t, head.sessionConn(t), "EXPLAIN SELECT city, count(*) FROM demo.rides GROUP BY city")
	text := strings.Join(rows, "\n")
	for _, want := range []string{
		"distributed_plan", "3 data nodes, 1 distributed scan, 1 shuffle; the final stage runs on each data node",
		"Shuffle 0: hash(city) into 3 buckets across data nodes", "HashAggregate",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, text)
		}
	}
}

// TestDistributedQueryWithADeadNode: a data node that stops answering fails the queries that
// need it with UNAVAILABLE, a retryable error naming the node, and the head goes on serving.
func TestDistributedQueryWithADeadNode(t *testing.T) {
	wh := demoWarehouse(t)
	cfg := engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake"}
	key := ticket.NewKeyring([]byte("cluster secret"), nil)
	var nodes []string
	for range 3 {
		nodes = append(nodes, startDataNode(t, cfg, key).addr)
	}
	var offered atomic.Pointer[[]string]
	offered.Store(&nodes)
	head := startServer(t, cfg, Options{TicketKey: key, DataNodes: func() []string { return *offered.Load() }})
	conn := head.sessionConn(t)
	const query = "SELECT city, count(*) AS n FROM demo.rides GROUP BY city ORDER BY city"
	_, before := adbcQuery(t, conn, query)
	if len(before) != 8 {
		t.Fatalf("%d cities before the loss, want 8", len(before))
	}

	stopDataNode(nodes[2])
	// The head still offers the dead node (it has not noticed): the gather from it fails.
	_, err := firstValue(t, conn, query)
	if err == nil {
		t.Fatal("a query needing a dead data node succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "Unavailable") || !strings.Contains(msg, nodes[2]) || !strings.Contains(msg, "retry") {
		t.Errorf("error = %v, want UNAVAILABLE naming %s and saying to retry", err, nodes[2])
	}
	// Once the head stops offering it, the same query runs on the other two.
	alive := nodes[:2]
	offered.Store(&alive)
	_, after := adbcQuery(t, conn, query)
	if !slices.Equal(after, before) {
		t.Errorf("after the loss: %v, want %v", after, before)
	}
}

// TestExplainAnalyzeRunsOverTheDataNodes: EXPLAIN ANALYZE on a head with data nodes runs the
// query as it runs for a client and reports each process's part with its own measurements:
// the scans' rows add up to the table's over the nodes, and the final stage returned what the
// query answers, from the nodes or from the head.
func TestExplainAnalyzeRunsOverTheDataNodes(t *testing.T) {
	head, _, nodes := startLakeCluster(t)
	conn := head.sessionConn(t)
	_, counted := adbcQuery(t, conn, "SELECT count(*) FROM demo.rides")
	tableRows, err := strconv.ParseInt(counted[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		query, where string
		onNodes      bool
	}{
		{"SELECT city, count(*), sum(fare) FROM demo.rides GROUP BY city", "the final stage ran on the data nodes", true},
		{"SELECT city, count(*) AS n FROM demo.rides GROUP BY city ORDER BY n DESC LIMIT 3", "the final stage ran on the head", false},
	} {
		t.Run(tt.query, func(t *testing.T) {
			_, answer := adbcQuery(t, conn, tt.query)
			_, rows := adbcQuery(t, conn, "EXPLAIN ANALYZE "+tt.query)
			text := strings.Join(rows, "\n")
			if !strings.Contains(text, "3 data nodes") || !strings.Contains(text, tt.where) {
				t.Fatalf("EXPLAIN ANALYZE does not say it ran over 3 data nodes %s:\n%s", tt.where, text)
			}
			var scanned, final int64
			section := ""
			for _, line := range rows {
				kind, plan, _ := strings.Cut(line, ",")
				if kind != "analyzed_plan" {
					continue
				}
				switch {
				case strings.HasPrefix(plan, "head: final stage "):
					section = "head"
					final += metric(t, plan, "rows")
				case strings.HasPrefix(plan, "data node "):
					section = plan[:strings.Index(plan, ":")]
					if strings.Contains(plan, "final stage ") {
						final += metric(t, plan, "rows")
					}
				case strings.Contains(plan, "Scan: demo.rides") && !strings.Contains(plan, "(not run here)"):
					if section == "head" || section == "" {
						t.Errorf("the head scanned the table itself: %s", plan)
					}
					scanned += metric(t, plan, "rows")
				}
			}
			for i, addr := range nodes {
				if !strings.Contains(text, fmt.Sprintf("data node %d (%s)", i, addr)) {
					t.Errorf("no part of data node %d (%s):\n%s", i, addr, text)
				}
			}
			if scanned != tableRows {
				t.Errorf("the nodes' scans read %d rows, the table has %d:\n%s", scanned, tableRows, text)
			}
			if final != int64(len(answer)) {
				t.Errorf("the final stage returned %d rows, the query answers %d:\n%s", final, len(answer), text)
			}
			if strings.Contains(text, "head: final stage") == tt.onNodes {
				t.Errorf("the head's final stage is reported %v, want %v:\n%s", !tt.onNodes, !tt.onNodes, text)
			}
		})
	}
}

// metric reads "name=N" from an EXPLAIN ANALYZE line.
func metric(t *testing.T, line, name string) int64 {
	t.Helper()
	at := strings.Index(line, " "+name+"=")
	if at < 0 {
		t.Fatalf("no %s= in %q", name, line)
	}
	v := line[at+len(name)+2:]
	if end := strings.IndexByte(v, ' '); end >= 0 {
		v = v[:end]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s= in %q: %v", name, line, err)
	}
	return n
}
