package flightsql

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cachedb/cachedb/engine"
)

// testServer is a real server on a loopback port, shut down when the test ends.
type testServer struct {
	srv  *Server
	eng  *engine.Engine
	addr string
}

func startServer(t *testing.T, cfg engine.Config, opts Options) *testServer {
	t.Helper()
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
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
	return &testServer{srv: srv, eng: eng, addr: lis.Addr().String()}
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
