package exec

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/internal/stream"
)

// Shared helpers of the memory-limit and spilling tests.

// limitedContext returns a task context whose query may reserve at most limit bytes (0: no
// limit) and spills into a fresh directory. When the test ends it checks that no Arrow memory
// leaked, that no reservation is left and that the spill directory is empty.
func limitedContext(t *testing.T, batch int, limit int64) (*TaskContext, *mempool.Pool) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	pool := mempool.New(limit)
	dir := t.TempDir()
	t.Cleanup(func() {
		mem.AssertSize(t, 0)
		if r := pool.Stats().Reserved; r != 0 {
			t.Errorf("%d bytes still reserved", r)
		}
		if n := spillFileCount(t, dir); n != 0 {
			t.Errorf("%d spill files left in %s", n, dir)
		}
	})
	return &TaskContext{Alloc: mem, BatchSize: batch, Memory: pool.Group("this query", 0), SpillDir: dir}, pool
}

func spillFileCount(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(entries)
}

// runRows executes every partition of op (merged, as a query's consumer does) and renders its
// rows in output order.
func runRows(ctx context.Context, op Operator, tc *TaskContext) ([]string, error) {
	rdr, err := executeMerged(ctx, op, tc)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var rows []string
	for rdr.Next() {
		b := rdr.RecordBatch()
		if !b.Schema().Equal(op.Schema()) {
			return nil, fmt.Errorf("batch schema %s, want %s", b.Schema(), op.Schema())
		}
		rows = append(rows, formatRows(b)...)
	}
	return rows, rdr.Err()
}

// wantExhausted fails the test unless err is a refused reservation naming the limit.
func wantExhausted(t *testing.T, err error) {
	t.Helper()
	if err == nil || errs.CategoryOf(err) != errs.ResourceExhausted || !strings.Contains(err.Error(), "memory limit") {
		t.Fatalf("got error %v, want a ResourceExhausted memory limit error", err)
	}
}

// spillTestSchema has an id (unique), an int key with NULLs and few values, a string key with
// NULLs and duplicates, and a payload string.
var spillTestSchema = schemaOf("id", opInt64, "k", opInt64, "s", opString, "pad", opString)

// spillTestSource returns n random rows over parts partitions in batches of perBatch rows.
func spillTestSource(t *testing.T, n, parts, perBatch int, seed int64) *sourceOp {
	t.Helper()
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewSource(seed))
	out := make([][]arrow.RecordBatch, parts)
	b := array.NewRecordBuilder(mem, spillTestSchema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if rng.Intn(6) == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Int64Builder).Append(int64(rng.Intn(n/8+1) - 5))
		}
		if rng.Intn(7) == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("s%03d", rng.Intn(n/10+1)))
		}
		b.Field(3).(*array.StringBuilder).Append(strings.Repeat("x", rng.Intn(40)))
		if (i+1)%perBatch == 0 || i == n-1 {
			p := (i / perBatch) % parts
			out[p] = append(out[p], b.NewRecordBatch())
		}
	}
	return newSource(t, spillTestSchema, out...)
}

// cancelAfter is a source wrapper that cancels the query after its partitions together have
// yielded n batches.
type cancelAfter struct {
	Operator
	n      *int64
	cancel context.CancelFunc
}

func (c cancelAfter) Execute(ctx context.Context, p int, tc *TaskContext) (array.RecordReader, error) {
	rdr, err := c.Operator.Execute(ctx, p, tc)
	if err != nil {
		return nil, err
	}
	return stream.Pull(ctx, rdr.Schema(), func() (arrow.RecordBatch, error) {
		if !rdr.Next() {
			return nil, rdr.Err()
		}
		if atomic.AddInt64(c.n, -1) == 0 {
			c.cancel()
		}
		b := rdr.RecordBatch()
		b.Retain()
		return b, nil
	}, rdr.Release), nil
}

// wantCanceled fails the test unless err reports a canceled query.
func wantCanceled(t *testing.T, err error) {
	t.Helper()
	if err == nil || !(errs.CategoryOf(err) == errs.Canceled || errors.Is(err, context.Canceled)) {
		t.Fatalf("got error %v, want the query canceled", err)
	}
}

// sameRowSet fails the test unless got and want hold the same rows, reporting a few that differ.
func sameRowSet(t *testing.T, got, want []string) {
	t.Helper()
	g, w := map[string]int{}, map[string]int{}
	for _, r := range got {
		g[r]++
	}
	for _, r := range want {
		w[r]++
	}
	var diffs []string
	for r, n := range g {
		if w[r] != n {
			diffs = append(diffs, fmt.Sprintf("got %d×, want %d×: %.200s", n, w[r], r))
		}
	}
	for r, n := range w {
		if g[r] == 0 {
			diffs = append(diffs, fmt.Sprintf("got 0×, want %d×: %.200s", n, r))
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("%d rows, want %d; %d differ, e.g.:\n%s", len(got), len(want), len(diffs), strings.Join(diffs[:min(len(diffs), 6)], "\n"))
	}
}

// wantSameRowsUnderLimit runs op without a memory limit and under limit bytes (batches of
// batch rows) and checks that both give the same rows and that the limit refused a reservation
// (what held the memory spilled: fits says what fitting would mean).
func wantSameRowsUnderLimit(t *testing.T, op Operator, batch int, limit int64, fits string) {
	t.Helper()
	free, _ := limitedContext(t, batch, 0)
	want, err := runRows(context.Background(), op, free)
	if err != nil {
		t.Fatal(err)
	}
	tc, pool := limitedContext(t, batch, limit)
	got, err := runRows(context.Background(), op, tc)
	if err != nil {
		t.Fatal(err)
	}
	sameRowSet(t, got, want)
	if pool.Stats().Refusals == 0 {
		t.Fatal(fits + ": nothing spilled")
	}
}
