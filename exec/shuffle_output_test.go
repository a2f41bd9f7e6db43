package exec

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
)

// waitFor polls cond until it holds, failing the test after a generous deadline (a deadlock
// or a bound never reached, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("20 s passed and still not: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestShuffleOutputWaitsAtItsBound: with no reader, a producer fills each bucket to its bound
// (one batch, for a bound of one byte) and waits, holding no more than one batch per bucket and
// reserving exactly what it holds from the query's memory; read to the end, every row arrives
// and the memory is given back.
func TestShuffleOutputWaitsAtItsBound(t *testing.T) {
	tc := newTestContext(t, 0)
	pool := mempool.Unlimited()
	tc.Memory = pool.Group("this query", 0)
	src, want := manyRowsSource(t, tc, 1, 40, 50)
	const buckets = 3
	shuffle := NewShuffle(0, src, Buckets, []Expr{intCol(0, "key")}, buckets)
	run := *tc
	run.Exchange = &loopExchange{nodes: 1, self: 0}
	out := StartShuffleBounded(context.Background(), shuffle, &run, 1)
	defer out.Close()

	waitFor(t, "the producer waits for its readers", func() bool {
		out.mu.Lock()
		defer out.mu.Unlock()
		return out.stalled
	})
	out.mu.Lock()
	for i, q := range out.buckets {
		if len(q) > 1 {
			t.Errorf("bucket %d holds %d batches past a bound of one byte, want at most 1", i, len(q))
		}
	}
	out.mu.Unlock()
	if held, reserved := out.Held(), pool.Stats().Reserved; held == 0 || held != reserved {
		t.Errorf("the buckets hold %d bytes and the pool counts %d, want the same, above 0", held, reserved)
	}

	var got []string
	for b := range buckets {
		rdr, ok, err := out.Claim(context.Background(), b)
		if err != nil || !ok {
			t.Fatalf("claim %d: %v %v", b, ok, err)
		}
		got = append(got, drainRows(t, rdr)...)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("read %d rows, want %d", len(got), len(want))
	}
	if n := pool.Stats().Reserved; n != 0 {
		t.Errorf("after every bucket was read the pool still counts %d bytes", n)
	}
}

// gatedOp is a source whose partitions yield nothing until gate is closed, then src's rows.
type gatedOp struct {
	*sourceOp
	gate chan struct{}
}

func (g *gatedOp) Execute(ctx context.Context, p int, tc *TaskContext) (array.RecordReader, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.sourceOp.Execute(ctx, p, tc)
}

// TestShuffleReadersWaitQuietly: readers of empty buckets of a producer that has nothing yet
// sleep until something changes; they do not keep waking each other (each wait used to wake
// every other waiting reader, which did the same, so two of them spun a core). Every row still
// arrives once the producer goes on.
func TestShuffleReadersWaitQuietly(t *testing.T) {
	tc := newTestContext(t, 0)
	src, want := manyRowsSource(t, tc, 1, 5, 40)
	gated := &gatedOp{sourceOp: src, gate: make(chan struct{})}
	const buckets = 3
	shuffle := NewShuffle(0, gated, Buckets, []Expr{intCol(0, "key")}, buckets)
	run := *tc
	run.Exchange = &loopExchange{nodes: 1, self: 0}
	out := StartShuffle(context.Background(), shuffle, &run)
	defer out.Close()

	rows := make([][]string, buckets)
	done := make(chan struct{}, buckets)
	for b := range buckets {
		rdr, ok, err := out.Claim(context.Background(), b)
		if err != nil || !ok {
			t.Fatalf("claim %d: %v %v", b, ok, err)
		}
		go func() {
			defer func() { done <- struct{}{} }()
			defer rdr.Release()
			for rdr.Next() {
				rows[b] = append(rows[b], formatRows(rdr.RecordBatch())...)
			}
		}()
	}
	waitFor(t, "every reader waits on its empty bucket", func() bool {
		out.mu.Lock()
		defer out.mu.Unlock()
		return out.waiting == buckets
	})
	out.mu.Lock()
	quiet := out.changed // replaced by every wake-up
	out.mu.Unlock()
	for range 2000 {
		runtime.Gosched()
	}
	out.mu.Lock()
	woken := out.changed != quiet
	out.mu.Unlock()
	if woken {
		t.Error("readers waiting on empty buckets woke each other with nothing produced")
	}

	close(gated.gate)
	for range buckets {
		<-done
	}
	got := slices.Concat(rows...)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("read %d rows, want %d", len(got), len(want))
	}
}

// TestShuffleBoundedReadInSequence: 4 producers × 8 buckets under a bound of one byte, read by
// one reader that reads bucket 0 of every producer to its end before bucket 1, and so on (a
// client reading one endpoint after another). A producer stalled on a full bucket that nobody
// reads yet would deadlock this; the rule of ShuffleOutput lets a starved reader through, and
// every row arrives.
func TestShuffleBoundedReadInSequence(t *testing.T) {
	tc := newTestContext(t, 0)
	const producers, buckets = 4, 8
	src, want := manyRowsSource(t, tc, producers, 10, 30)
	shuffle := NewShuffle(0, src, Buckets, []Expr{intCol(0, "key")}, buckets)
	outs := make([]*ShuffleOutput, producers)
	for i := range outs {
		run := *tc
		run.Exchange = &loopExchange{nodes: producers, self: i}
		outs[i] = StartShuffleBounded(context.Background(), shuffle, &run, 1)
		defer outs[i].Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []string
	for b := range buckets {
		for _, out := range outs {
			rdr, ok, err := out.Claim(ctx, b)
			if err != nil || !ok {
				t.Fatalf("claim %d: %v %v", b, ok, err)
			}
			got = append(got, drainRows(t, rdr)...)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("read %d rows, want %d", len(got), len(want))
	}
}

// TestShuffleOutputRefusedReservation: a query whose memory limit is below what its reader
// needs buffered fails with RESOURCE_EXHAUSTED instead of waiting forever, and gives back
// everything it reserved.
func TestShuffleOutputRefusedReservation(t *testing.T) {
	tc := newTestContext(t, 0)
	pool := mempool.Unlimited()
	tc.Memory = pool.Group("this query", 64)
	src, _ := manyRowsSource(t, tc, 1, 5, 50)
	shuffle := NewShuffle(0, src, Buckets, []Expr{intCol(0, "key")}, 2)
	run := *tc
	run.Exchange = &loopExchange{nodes: 1, self: 0}
	out := StartShuffleBounded(context.Background(), shuffle, &run, 1)
	rdr, _, err := out.Claim(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for rdr.Next() {
	}
	err = rdr.Err()
	rdr.Release()
	if errs.CategoryOf(err) != errs.ResourceExhausted {
		t.Errorf("reading a shuffle over a 64-byte query limit: %v, want resource exhausted", err)
	}
	out.Close()
	if n := pool.Stats().Reserved; n != 0 {
		t.Errorf("after Close the pool still counts %d bytes", n)
	}
}

// drainRows reads rdr to its end as rows and releases it.
func drainRows(t *testing.T, rdr array.RecordReader) []string {
	t.Helper()
	defer rdr.Release()
	var rows []string
	for rdr.Next() {
		rows = append(rows, formatRows(rdr.RecordBatch())...)
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}
