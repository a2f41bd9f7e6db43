package node

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/internal/errs"
)

// silentPeer accepts connections and never answers on them: a data node that hangs. It is
// closed when the test ends.
func silentPeer(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = lis.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return lis.Addr().String()
}

// TestCloseEndsEveryGoroutine leaves a runtime with all it can hold in the background, then
// closes it: a final stage read halfway (its shuffle producer and execution running), a
// finished one (its idle timer pending: the idle timeout is an hour), and an abandoned one whose
// cancel broadcast waits on a peer that never answers. Close returns, no goroutine the runtime
// started is left, the reader still open fails instead of hanging, and new work is refused.
func TestCloseEndsEveryGoroutine(t *testing.T) {
	ctx := context.Background()
	eng := newLakeEngine(t)
	peer := silentPeer(t)
	// The catalog connects on first use and keeps its connection: not the runtime's.
	if _, err := eng.Distribute(ctx, "SELECT ride_id FROM demo.rides", 1); err != nil {
		t.Fatal(err)
	}
	before := goleak.IgnoreCurrent()

	rt, err := New(Config{Engine: eng, Shuffles: cluster.NewShuffles(ticket.NewKeyring([]byte("secret"), nil)), StageIdle: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	stage := func(id, query string, nodes ...string) cluster.Stage {
		t.Helper()
		plan, err := eng.Distribute(ctx, query, len(nodes))
		if err != nil || plan == nil {
			t.Fatalf("Distribute(%s) = %+v, %v", query, plan, err)
		}
		st := cluster.Stage{Query: id, SQL: query, Nodes: nodes, Expires: time.Now().Add(time.Hour)}
		for _, s := range plan.Scans {
			st.Owners = append(st.Owners, make([]int, s.Tasks())) // every task on node 0
		}
		return st
	}
	const grouped = "SELECT city, count(*) FROM demo.rides GROUP BY city"
	// Both sides shuffled by key; the join streams its probe side's bucket.
	const joined = "SELECT a.ride_id, b.city FROM demo.rides a JOIN demo.rides b ON a.ride_id = b.ride_id"

	// Read to the end and released: the execution waits out its idle timeout.
	done, err := rt.ExecuteStage(ctx, stage("done", grouped, "self"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if rows := rowsOf(t, done.Reader); len(rows) != 8 {
		t.Fatalf("the finished stage read %d cities, want 8", len(rows))
	}
	// Read halfway and left open.
	open, err := rt.ExecuteStage(ctx, stage("open", joined, "self"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !open.Reader.Next() {
		t.Fatalf("the open stage read nothing: %v", open.Reader.Err())
	}
	// Released before its end: the execution is canceled here and on the silent peer.
	abandoned, err := rt.ExecuteStage(ctx, stage("abandoned", "SELECT ride_id FROM demo.rides", "self", peer), 0)
	if err != nil {
		t.Fatal(err)
	}
	abandoned.Reader.Release()
	if c := rt.Stages(); c.Executions < 2 || c.Producers < 1 {
		t.Fatalf("before Close the runtime holds %+v; want the open and the finished execution and the open one's producers", c)
	}

	closed := make(chan struct{})
	go func() {
		rt.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("Close did not return")
	}
	for open.Reader.Next() {
	}
	if open.Reader.Err() == nil {
		t.Error("the stage left open read to its end after Close; want an error")
	}
	open.Reader.Release()
	if c := rt.Stages(); c.Executions != 0 || c.Producers != 0 {
		t.Errorf("after Close the runtime holds %+v", c)
	}
	if _, err := rt.ExecuteStage(ctx, stage("late", grouped, "self"), 0); errs.CategoryOf(err) != errs.Unavailable {
		t.Errorf("a stage after Close: %v, want Unavailable", err)
	}
	goleak.VerifyNone(t, before)
}
