package flightsql

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestInterceptorsRecoverPanics(t *testing.T) {
	_, err := unaryInterceptor(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/test/Unary"},
		func(context.Context, any) (any, error) { panic("nil map") })
	if status.Code(err) != codes.Internal {
		t.Errorf("unary panic gave %v, want Internal", err)
	}
	err = streamInterceptor(nil, nil, &grpc.StreamServerInfo{FullMethod: "/test/Stream"},
		func(any, grpc.ServerStream) error { panic("index out of range") })
	if status.Code(err) != codes.Internal {
		t.Errorf("stream panic gave %v, want Internal", err)
	}
	err = streamInterceptor(nil, nil, &grpc.StreamServerInfo{FullMethod: "/test/Stream"},
		func(any, grpc.ServerStream) error { return errs.NotFoundf("table %q does not exist", "t") })
	if st, _ := status.FromError(err); st.Code() != codes.NotFound || st.Message() != `table "t" does not exist` {
		t.Errorf("stream error gave %v, want NotFound with the engine's message", err)
	}
}

func TestPreparedStoreBoundsAndExpires(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	store := newPreparedStore(10, 2, time.Minute, func() time.Time { return now })
	client := clientID{addr: "test"}
	stmt := func() *preparedStatement { return &preparedStatement{sql: "SELECT 1"} }

	h1, err := store.add(client, stmt())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.add(client, stmt()); err != nil {
		t.Fatal(err)
	}
	if _, err := store.add(client, stmt()); errs.CategoryOf(err) != errs.ResourceExhausted {
		t.Fatalf("third statement over a limit of 2 per client: %v, want resource exhausted", err)
	}
	if _, err := store.get(h1); err != nil {
		t.Fatalf("get of a live handle: %v", err)
	}
	if _, err := store.get([]byte("\x00forged")); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("get of a forged handle: %v, want invalid input", err)
	}

	now = now.Add(2 * time.Minute)
	if _, err := store.get(h1); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("get of an expired handle: %v, want invalid input", err)
	}
	if _, err := store.add(client, stmt()); err != nil {
		t.Errorf("add after the others expired: %v", err)
	}
	store.remove(h1) // already gone: not an error
}
