package flightsql

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/engine"
)

// newClient opens a Flight SQL client on its own gRPC connection.
func (ts *testServer) newClient(t *testing.T) *flightsql.Client {
	t.Helper()
	cl, err := flightsql.NewClient(ts.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("flightsql.NewClient: %v", err)
	}
	return cl
}

// wantExhausted fails unless err is ResourceExhausted and names the per-client limit.
func wantExhausted(t *testing.T, what string, err error) {
	t.Helper()
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "limit per client") {
		t.Fatalf("%s: %v, want ResourceExhausted naming the limit per client", what, err)
	}
}

// query runs sql through cl and reads its whole result.
func query(ctx context.Context, cl *flightsql.Client, sql string) error {
	info, err := cl.Execute(ctx, sql)
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
}

// pollUntil calls cond until it holds or the test's deadline passes.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPreparedStatementLimitIsPerClient(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{MaxPreparedPerClient: 3})
	ctx := testContext(t)
	greedy, other := ts.newClient(t), ts.arrowClient(t)

	for i := range 3 {
		if _, err := greedy.Prepare(ctx, "SELECT 1"); err != nil {
			t.Fatalf("greedy's statement %d: %v", i+1, err)
		}
	}
	_, err := greedy.Prepare(ctx, "SELECT 1")
	wantExhausted(t, "greedy's fourth prepared statement", err)

	prep, err := other.Prepare(ctx, "SELECT 41 + 1")
	if err != nil {
		t.Fatalf("another client while greedy is at its limit: %v", err)
	}
	info, err := prep.Execute(ctx)
	if err != nil {
		t.Fatalf("executing the other client's statement: %v", err)
	}
	if _, rows := readInfo(t, other, info); len(rows) != 1 || rows[0] != "42" {
		t.Errorf("other client's result %v, want [42]", rows)
	}

	// Closing greedy's connection (not its statements) frees its slots.
	if err := greedy.Close(); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "greedy's statements are dropped", func() bool { return ts.srv.prepared.len() == 1 })
	again := ts.newClient(t)
	defer again.Close()
	for i := range 3 {
		if _, err := again.Prepare(ctx, "SELECT 1"); err != nil {
			t.Fatalf("statement %d on a new connection: %v", i+1, err)
		}
	}
}

func TestConcurrentStatementLimitIsPerClient(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{MaxConcurrentPerClient: 1, MaxBatchBytes: 64 << 10})
	// Far more than gRPC's flow-control windows hold: an unread stream keeps running.
	makeBigTable(t, ts.eng, "big", 20_000, 1_000)
	ctx := testContext(t)
	busy, other := ts.newClient(t), ts.arrowClient(t)
	defer busy.Close()

	info, err := busy.Execute(ctx, "SELECT id, text FROM big")
	if err != nil {
		t.Fatal(err)
	}
	streamCtx, stopStream := context.WithCancel(ctx)
	defer stopStream()
	rdr, err := busy.DoGet(streamCtx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatalf("first batch of the big result: %v", rdr.Err())
	}

	_, err = busy.Execute(ctx, "SELECT 1")
	wantExhausted(t, "a second statement while the first streams", err)
	_, err = busy.ExecuteUpdate(ctx, "CREATE TABLE t (a INT)")
	wantExhausted(t, "an update while the first statement streams", err)
	prep, err := busy.Prepare(ctx, "SELECT 2")
	if err != nil {
		t.Fatalf("preparing takes no slot: %v", err)
	}
	_, err = prep.Execute(ctx)
	wantExhausted(t, "a prepared statement while the first streams", err)

	if err := query(ctx, other, "SELECT count(*) FROM big"); err != nil {
		t.Fatalf("another client while the first is at its limit: %v", err)
	}

	// Abandoning the stream gives the slot back.
	stopStream()
	rdr.Release()
	pollUntil(t, "the abandoned stream's slot is free", func() bool { return query(ctx, busy, "SELECT 1") == nil })
	// A stream read to its end gives it back before the client sees the end.
	for range 3 {
		if err := query(ctx, busy, "SELECT 1"); err != nil {
			t.Fatalf("one statement after another: %v", err)
		}
	}
}
