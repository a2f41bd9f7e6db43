package flightsql

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/node"
)

// testServer is a real server on a loopback port, shut down when the test ends.
type testServer struct {
	srv  *Server
	eng  *engine.Engine
	node *node.Runtime
	addr string
}

// startServer serves an engine of cfg with opts, and a node runtime signing with
// opts.TicketKey unless opts.Node gives one, as every process of a cluster runs.
func startServer(t *testing.T, cfg engine.Config, opts Options) *testServer {
	t.Helper()
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	if opts.TicketKey == nil {
		opts.TicketKey = ticket.RandomKeyring()
	}
	if opts.Node == nil {
		opts.Node = newRuntime(t, eng, opts.TicketKey)
	}
	srv := NewServer(eng, opts)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &testServer{srv: srv, eng: eng, node: opts.Node, addr: lis.Addr().String()}
}

// newRuntime is a node runtime over eng whose shuffle fetches and cancel broadcasts are signed
// with key. It is closed when the test ends, after the servers started later are shut down.
func newRuntime(tb testing.TB, eng *engine.Engine, key *ticket.Keyring) *node.Runtime {
	tb.Helper()
	rt, err := node.New(node.Config{Engine: eng, Shuffles: cluster.NewShuffles(key)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(rt.Close)
	return rt
}

// arrowClient is arrow-go's Flight SQL client for ts, closed when the test ends.
func (ts *testServer) arrowClient(t *testing.T) *flightsql.Client {
	t.Helper()
	cl, err := flightsql.NewClient(ts.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("flightsql.NewClient: %v", err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
