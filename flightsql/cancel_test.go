package flightsql

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
)

// cancelCluster is a head with three data nodes in this process, for abandoning queries.
type cancelCluster struct {
	head  *testServer
	nodes []*testServer
	addrs []string
	// alloc serves every engine of the cluster: what it holds is what their buffers hold.
	alloc *memory.CheckedAllocator
}

func startCancelCluster(t *testing.T) *cancelCluster {
	t.Helper()
	return startCancelClusterWith(t, Options{})
}

// startCancelClusterWith starts the cluster with the head's options opts (its key and data
// nodes set here).
func startCancelClusterWith(t *testing.T, opts Options) *cancelCluster {
	t.Helper()
	wh := demoWarehouse(t)
	key := ticket.NewKeyring([]byte("cluster secret"), nil)
	c := &cancelCluster{alloc: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	for range 3 {
		n := startDataNode(t, engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake", Alloc: c.alloc}, key)
		c.nodes = append(c.nodes, n)
		c.addrs = append(c.addrs, n.addr)
	}
	opts.TicketKey, opts.DataNodes = key, func() []string { return c.addrs }
	c.head = startServer(t, engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake", Alloc: c.alloc}, opts)
	return c
}

// held describes what any process of the cluster still holds for distributed executions
// ("" when nothing): executions, shuffle producers, memory reservations and Arrow buffers.
func (c *cancelCluster) held() string {
	var parts []string
	if n := c.alloc.CurrentAlloc(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d bytes of Arrow buffers", n))
	}
	for i, s := range append([]*testServer{c.head}, c.nodes...) {
		if st := s.node.Stages(); st.Executions > 0 || st.Producers > 0 {
			parts = append(parts, fmt.Sprintf("process %d: %d executions, %d producers", i, st.Executions, st.Producers))
		}
		if mem := s.eng.Pool().Stats(); mem.Reserved > 0 {
			parts = append(parts, fmt.Sprintf("process %d: %d bytes reserved (%v)", i, mem.Reserved, mem.Consumers))
		}
	}
	return strings.Join(parts, "; ")
}

// warmUp abandons a query at each endpoint and one the head finishes, which opens every
// connection between the processes that later rounds reuse (their goroutines stay), and returns
// the goroutine count after that.
func (c *cancelCluster) warmUp(t *testing.T) int {
	t.Helper()
	for i := range c.nodes {
		c.abandon(t, joinOnNodes, i)
	}
	c.abandon(t, joinOnHead, 0)
	c.waitReleased(t, -1, 0)
	return runtime.NumGoroutine()
}

// waitReleased polls until no process holds anything of a distributed execution and the
// goroutines are back to at most base+slack, and fails the test if that does not happen
// within a generous deadline (the machine may be loaded; nothing here depends on timing).
func (c *cancelCluster) waitReleased(t *testing.T, base, slack int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		held, n := c.held(), runtime.NumGoroutine()
		if held == "" && (base < 0 || n <= base+slack) {
			return
		}
		if time.Now().After(deadline) {
			if held != "" {
				c.alloc.AssertSize(t, 0)
				t.Fatalf("20 s after the clients went away the cluster still holds: %s", held)
			}
			buf := make([]byte, 1<<20)
			t.Fatalf("20 s after the clients went away %d goroutines run, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// abandon runs query on the head, opens endpoint which of its answer (at the node it is
// located at, or the head), reads one batch of it, and goes away as a killed client does.
func (c *cancelCluster) abandon(t *testing.T, query string, which int) {
	t.Helper()
	if err := retryUnavailable(t, func() error { return c.tryAbandon(query, which) }); err != nil {
		t.Fatal(err)
	}
}

func (c *cancelCluster) tryAbandon(query string, which int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := flightsql.NewClient(c.head.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cl.Close()
	info, err := cl.Execute(ctx, query)
	if err != nil {
		return err
	}
	ep := info.Endpoint[which%len(info.Endpoint)]
	at := cl
	if len(ep.Location) == 1 {
		if at, err = flightsql.NewClient(strings.TrimPrefix(ep.Location[0].Uri, "grpc://"), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
			return err
		}
		defer at.Close()
	}
	rdr, err := at.DoGet(ctx, ep.Ticket)
	if err != nil {
		return err
	}
	defer rdr.Release()
	if !rdr.Next() && rdr.Err() != nil {
		return fmt.Errorf("reading the first batch: %w", rdr.Err())
	}
	cancel()
	return nil
}

// retryUnavailable runs try again, up to 3 times in all, while it fails with UNAVAILABLE: on
// a loaded machine a connection between two processes of the cluster may time out, which the
// cluster reports as retryable; that is not what these tests are about.
func retryUnavailable(t *testing.T, try func() error) error {
	var err error
	for range 3 {
		if err = try(); status.Code(err) != codes.Unavailable && !strings.Contains(fmt.Sprint(err), "Unavailable") {
			return err
		}
		t.Logf("retrying after: %v", err)
	}
	return err
}

func dialFlightSQL(t *testing.T, addr string) *flightsql.Client {
	t.Helper()
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// Queries that take a while: a join of every ride with every ride of its city (billions of
// rows), whose final stage runs on the data nodes, and the same join gathered by the head.
const (
	joinOnNodes = "SELECT a.ride_id, b.ride_id FROM demo.rides a JOIN demo.rides b ON a.city = b.city"
	joinOnHead  = "SELECT a.ride_id, b.ride_id FROM demo.rides a JOIN demo.rides b ON a.city = b.city UNION ALL SELECT 1, 2"
)

// TestAbandonedShuffleJoinStopsEverywhere: a client that reads one endpoint of a distributed
// shuffle join and goes away, leaving the other endpoints unread, stops the join on every node:
// the shuffle producers, their unread buckets and the plans are released and the goroutines
// return to what they were; likewise for a join the head finishes.
func TestAbandonedShuffleJoinStopsEverywhere(t *testing.T) {
	c := startCancelCluster(t)
	base := c.warmUp(t)

	for i, query := range []string{joinOnNodes, joinOnNodes, joinOnHead} {
		c.abandon(t, query, i)
		c.waitReleased(t, base, 10)
	}
	for i, s := range append([]*testServer{c.head}, c.nodes...) {
		if st := s.node.Stages(); st.Canceled == 0 && i > 0 {
			t.Errorf("data node %d remembers no canceled execution: the cancel did not reach it", i-1)
		}
	}
}

// TestManyClientsKilledMidDoGet: clients killed while reading distributed joins leave nothing
// running or held on any node.
func TestManyClientsKilledMidDoGet(t *testing.T) {
	c := startCancelCluster(t)
	base := c.warmUp(t)

	const clients = 12
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			query := joinOnNodes
			if i%3 == 2 {
				query = joinOnHead
			}
			if err := retryUnavailable(t, func() error { return c.tryAbandon(query, i) }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	c.waitReleased(t, base, 10)
}

// TestCanceledExecutionIsRefused: once a reader abandons an execution, its other tickets are
// refused with CANCELLED rather than starting its work again.
func TestCanceledExecutionIsRefused(t *testing.T) {
	c := startCancelCluster(t)
	ctx := testContext(t)
	cl := dialFlightSQL(t, c.head.addr)
	defer cl.Close()
	var info *flight.FlightInfo
	readOne := func(ep *flight.FlightEndpoint) error {
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		at := dialFlightSQL(t, strings.TrimPrefix(ep.Location[0].Uri, "grpc://"))
		defer at.Close()
		rdr, err := at.DoGet(rctx, ep.Ticket)
		if err != nil {
			return err
		}
		defer rdr.Release()
		rdr.Next()
		return rdr.Err()
	}
	err := retryUnavailable(t, func() (err error) {
		if info, err = cl.Execute(ctx, joinOnNodes); err != nil {
			return err
		}
		if len(info.Endpoint) < 2 {
			t.Fatalf("%d endpoints, want one per node", len(info.Endpoint))
		}
		return readOne(info.Endpoint[0])
	})
	if err != nil {
		t.Fatal(err)
	}
	c.waitReleased(t, -1, 0)
	err = readOne(info.Endpoint[1])
	if err == nil || !strings.Contains(err.Error(), "Canceled") || !strings.Contains(err.Error(), "run the query again") {
		t.Errorf("reading another endpoint of an abandoned execution: %v, want CANCELLED saying to run the query again", err)
	}
}

// TestStatementTimeoutStopsTheJoinEverywhere: a statement past the server's statement timeout
// fails with DEADLINE_EXCEEDED, and the join it ran over the data nodes stops on every node.
func TestStatementTimeoutStopsTheJoinEverywhere(t *testing.T) {
	c := startCancelClusterWith(t, Options{StatementTimeout: 300 * time.Millisecond})
	ctx := testContext(t)
	cl := dialFlightSQL(t, c.head.addr)
	defer cl.Close()
	err := func() error {
		info, err := cl.Execute(ctx, joinOnHead)
		if err != nil {
			return err
		}
		rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			return err
		}
		defer rdr.Release()
		for rdr.Next() {
		}
		return rdr.Err()
	}()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a join of billions of rows under a 300 ms statement timeout: %v, want DEADLINE_EXCEEDED", err)
	}
	c.waitReleased(t, -1, 0)
}

// TestFinishedQueryReleasesTheHeadAndProducers: a join the head finishes and the client reads
// to the end leaves no execution on the head and no producer on any node (the nodes keep only
// the plan until the idle timeout).
func TestFinishedQueryReleasesTheHeadAndProducers(t *testing.T) {
	c := startCancelCluster(t)
	conn := c.head.sessionConn(t)
	var count string
	err := retryUnavailable(t, func() (err error) {
		count, err = firstValue(t, conn, "SELECT count(*) FROM demo.rides a JOIN demo.rides b ON a.ride_id = b.ride_id")
		return err
	})
	if err != nil || count == "0" {
		t.Fatalf("the join counted %s, %v", count, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		producers := 0
		for _, n := range c.nodes {
			producers += n.node.Stages().Producers
		}
		head := c.head.node.Stages()
		if head.Executions == 0 && producers == 0 && head.Canceled == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the query finished the head holds %+v and the nodes %d producers", head, producers)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
