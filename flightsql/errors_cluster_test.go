package flightsql

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/rpcerr"
)

// readEndpoint redeems ep (at the data node it names, else at the head) and reads it to the
// end; after the first batch it calls afterFirst (when set). It returns the stream's error.
func readEndpoint(ctx context.Context, t *testing.T, head *flightsql.Client, ep *flight.FlightEndpoint, afterFirst func()) error {
	at := head
	if len(ep.Location) == 1 {
		at = dialFlightSQL(t, strings.TrimPrefix(ep.Location[0].Uri, "grpc://"))
		defer at.Close()
	}
	rdr, err := at.DoGet(ctx, ep.Ticket)
	if err != nil {
		return err
	}
	defer rdr.Release()
	first := true
	for rdr.Next() {
		if first && afterFirst != nil {
			afterFirst()
		}
		first = false
	}
	return rdr.Err()
}

// TestDataNodeErrorsKeepTheirCategory: an error raised on a data node (a BIGINT overflow, bad
// input) reaches the client as INVALID_ARGUMENT with the node's message, whether the client
// reads it from the head (which gathered it from the nodes) or from a data node (which read it
// from its peers in a shuffle), and never as INTERNAL, UNKNOWN or UNAVAILABLE, nor with a gRPC
// prefix inside the message.
func TestDataNodeErrorsKeepTheirCategory(t *testing.T) {
	c := startCancelCluster(t)
	ctx := testContext(t)
	cl := dialFlightSQL(t, c.head.addr)
	defer cl.Close()
	for _, tt := range []struct {
		name, query string
		atNodes     bool
	}{
		{"gathered by the head", "SELECT ride_id * 4611686018427387904 AS x FROM demo.rides ORDER BY x", false},
		{"shuffled between data nodes", "SELECT city, sum(ride_id * 4611686018427387904) FROM demo.rides GROUP BY city", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var info *flight.FlightInfo
			err := retryUnavailable(t, func() (err error) {
				if info, err = cl.Execute(ctx, tt.query); err != nil {
					return err
				}
				if atNodes := len(info.Endpoint[0].Location) == 1; atNodes != tt.atNodes {
					t.Fatalf("endpoint at a data node: %v, want %v (the query does not take the path under test)", atNodes, tt.atNodes)
				}
				for _, ep := range info.Endpoint {
					if err = readEndpoint(ctx, t, cl, ep, nil); err != nil {
						return err
					}
				}
				return nil
			})
			if status.Code(err) != codes.InvalidArgument || errs.CategoryOf(rpcerr.FromStatus(err)) != errs.InvalidInput {
				t.Fatalf("error %v (code %s), want INVALID_ARGUMENT", err, status.Code(err))
			}
			msg := status.Convert(err).Message()
			if !strings.Contains(msg, "BIGINT value is out of range") || strings.Contains(msg, "rpc error") {
				t.Errorf("message %q: want the node's own, once", msg)
			}
		})
	}
}

// TestDataNodeErrorInALoadKeepsItsCategory: a dataset whose query fails on the data nodes
// that make its partitions fails the load on the head with the node's category (InvalidInput,
// not Internal), and the client gets INVALID_ARGUMENT with the node's message once, under the
// head's note of which partition and node it was.
func TestDataNodeErrorInALoadKeepsItsCategory(t *testing.T) {
	c := startDatasetCluster(t, demoWarehouse(t), 2)
	ctx := testContext(t)
	spec := engine.DatasetSpec{Name: "overflow", SQL: "SELECT ride_id * 4611686018427387904 AS x FROM demo.rides"}
	_, err := c.head.eng.Load(ctx, spec, nil)
	if errs.CategoryOf(err) != errs.InvalidInput || !strings.Contains(err.Error(), "BIGINT value is out of range") {
		t.Fatalf("load on the head: %v (category %v), want the node's invalid input", err, errs.CategoryOf(err))
	}
	_, err = loadSpec(ctx, flightClient(t, c.head.addr), spec)
	msg := status.Convert(err).Message()
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(msg, "on data node node-") ||
		!strings.Contains(msg, "BIGINT value is out of range") || strings.Contains(msg, "rpc error") {
		t.Fatalf("load through the head: %v, want INVALID_ARGUMENT naming the node, with its message once", err)
	}
}

// TestStoppedDistributedQueryReportsWhy: a distributed execution stopped while a client reads
// it from a data node reports CANCELLED when another reader abandoned it, and DEADLINE_EXCEEDED
// when the node's statement timeout ended it, not UNAVAILABLE (which asks for a retry) nor a
// bare context error.
func TestStoppedDistributedQueryReportsWhy(t *testing.T) {
	t.Run("canceled", func(t *testing.T) {
		c := startCancelCluster(t)
		ctx := testContext(t)
		cl := dialFlightSQL(t, c.head.addr)
		defer cl.Close()
		err := retryUnavailable(t, func() error {
			info, err := cl.Execute(ctx, joinOnNodes)
			if err != nil {
				return err
			}
			if len(info.Endpoint) < 2 {
				t.Fatalf("%d endpoints, want one per node", len(info.Endpoint))
			}
			// Once this reader has a batch, another reader of the same execution goes
			// away, which cancels the execution on every node.
			return readEndpoint(ctx, t, cl, info.Endpoint[1], func() {
				rctx, cancel := context.WithCancel(ctx)
				defer cancel()
				_ = readEndpoint(rctx, t, cl, info.Endpoint[0], cancel)
			})
		})
		if status.Code(err) != codes.Canceled || !strings.Contains(err.Error(), "run the query again") {
			t.Fatalf("a reader of an abandoned execution: %v, want CANCELLED saying to run the query again", err)
		}
		c.waitReleased(t, -1, 0)
	})
	t.Run("deadline", func(t *testing.T) {
		wh := demoWarehouse(t)
		key := ticket.NewKeyring([]byte("cluster secret"), nil)
		cfg := func() engine.Config {
			return engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake"}
		}
		var nodes []string
		for range 2 {
			eng, err := engine.New(cfg())
			if err != nil {
				t.Fatal(err)
			}
			rt := newRuntime(t, eng, key)
			actions := cluster.NodeConfig{ID: "node", Version: "test", Key: key, Store: rt, Shuffles: rt}
			_, addr, _ := serveEngine(t, eng, Options{TicketKey: key, Node: rt, Extend: cluster.NodeActions(actions), StatementTimeout: 300 * time.Millisecond})
			nodes = append(nodes, addr)
		}
		head := startServer(t, cfg(), Options{TicketKey: key, DataNodes: func() []string { return nodes }})
		ctx := testContext(t)
		cl := head.arrowClient(t)
		err := retryUnavailable(t, func() error {
			info, err := cl.Execute(ctx, joinOnNodes)
			if err != nil {
				return err
			}
			return readEndpoint(ctx, t, cl, info.Endpoint[0], nil)
		})
		if status.Code(err) != codes.DeadlineExceeded || !errors.Is(rpcerr.FromStatus(err), context.DeadlineExceeded) {
			t.Fatalf("a join of billions of rows under a 300 ms statement timeout on the node: %v, want DEADLINE_EXCEEDED", err)
		}
	})
}
