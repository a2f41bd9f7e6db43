package exec

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// replicatedJoinFixture is a replicated hash join of a 4-partition left side, whose partitions
// distributed scan 0 places on nodes 0, 1, 0, 1, with a 2-partition right side, run as node 0.
type replicatedJoinFixture struct {
	tc    *TaskContext
	mem   *memory.CheckedAllocator
	right *sourceOp
	join  Operator
}

func newReplicatedJoinFixture(t *testing.T) *replicatedJoinFixture {
	t.Helper()
	tc := newTestContext(t, 0)
	tc.Cache = NewQueryCache()
	tc.Exchange = &loopExchange{nodes: 2, self: 0, owners: [][]int{{0, 1, 0, 1}}}
	schema := schemaOf("k", opInt64, "v", opString)
	right := newSource(t, schema,
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, schema, []any{1, "a"}, []any{2, "b"})},
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, schema, []any{3, "c"})})
	lschema := schemaOf("id", opInt64)
	left := newSource(t, lschema,
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, lschema, []any{1}, []any{4})},
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, lschema, []any{2})},
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, lschema, []any{3}, []any{1})},
		[]arrow.RecordBatch{batchOf(t, tc.Alloc, lschema, []any{3})})
	join, err := NewReplicatedHashJoin(left, right, Placement{Scan: 0}, InnerJoin, []Expr{intCol(0, "id")}, []Expr{intCol(0, "k")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &replicatedJoinFixture{tc: tc, mem: tc.Alloc.(*memory.CheckedAllocator), right: right, join: join}
}

// open executes partition p of the join as node 0.
func (f *replicatedJoinFixture) open(t *testing.T, p int) array.RecordReader {
	t.Helper()
	rdr, err := f.join.Execute(context.Background(), p, f.tc)
	if err != nil {
		t.Fatalf("execute partition %d: %v", p, err)
	}
	return rdr
}

func drain(t *testing.T, rdr array.RecordReader) []string {
	t.Helper()
	var rows []string
	for rdr.Next() {
		rows = append(rows, formatRows(rdr.RecordBatch())...)
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestReplicatedHashJoinBuildsOncePerNode: a node joins each left partition it runs with the
// whole right side, built once for all of them, and frees the build when the last of them is
// released.
func TestReplicatedHashJoinBuildsOncePerNode(t *testing.T) {
	f := newReplicatedJoinFixture(t)
	before := f.mem.CurrentAlloc()
	// Node 0 runs partitions 0 and 2, concurrently.
	r0, r2 := f.open(t, 0), f.open(t, 2)
	got := drain(t, r0)
	r0.Release()
	if f.mem.CurrentAlloc() == before {
		t.Error("the build was freed while partition 2 still reads it")
	}
	got = append(got, drain(t, r2)...)
	if want := sorted("1|1|a", "3|3|c", "1|1|a"); !slices.Equal(sorted(got...), want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	if n := f.right.executions.Load(); n != 2 {
		t.Errorf("the right side's partitions were executed %d times, want 2 (one build)", n)
	}
	r2.Release()
	if got := f.mem.CurrentAlloc(); got != before {
		t.Errorf("%d bytes held after both partitions were released, want %d", got, before)
	}
	// A second execution builds afresh.
	r0 = f.open(t, 0)
	drain(t, r0)
	r0.Release()
	if n := f.right.executions.Load(); n != 4 {
		t.Errorf("the right side's partitions were executed %d times after a second execution, want 4", n)
	}
	f.tc.Cache.Release()
}

// TestReplicatedHashJoinEndsWithItsExecution: a build some of whose partitions never run is
// freed when the execution's cache is released, and not before its last reader is released.
func TestReplicatedHashJoinEndsWithItsExecution(t *testing.T) {
	f := newReplicatedJoinFixture(t)
	before := f.mem.CurrentAlloc()
	r0 := f.open(t, 0)
	f.tc.Cache.Release()
	if f.mem.CurrentAlloc() == before {
		t.Fatal("the build was freed while partition 0 still reads it")
	}
	r0.Release()
	if got := f.mem.CurrentAlloc(); got != before {
		t.Errorf("%d bytes held after the execution ended, want %d", got, before)
	}

	// Released with no reader left: freed at once.
	f.tc.Cache = NewQueryCache()
	r0 = f.open(t, 0)
	drain(t, r0)
	r0.Release()
	if f.mem.CurrentAlloc() == before {
		t.Fatal("the build was freed before partition 2 ran")
	}
	f.tc.Cache.Release()
	if got := f.mem.CurrentAlloc(); got != before {
		t.Errorf("%d bytes held after the execution ended, want %d", got, before)
	}
}

// TestReplicatedHashJoinInOneProcess: without data nodes every partition shares the build.
func TestReplicatedHashJoinInOneProcess(t *testing.T) {
	f := newReplicatedJoinFixture(t)
	f.tc.Exchange = nil
	got := collectRows(t, f.join, f.tc)
	if want := sorted("1|1|a", "2|2|b", "3|3|c", "1|1|a", "3|3|c"); !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	if n := f.right.executions.Load(); n != 2 {
		t.Errorf("the right side's partitions were executed %d times, want 2 (one build)", n)
	}
	f.tc.Cache.Release()
}

// TestReplicatedHashJoinSpillsOnEachNode: a replicated build that does not fit under the limit
// spills once per node, the node's partitions take turns loading its pairs, and the two nodes'
// partitions together return the rows of the whole join, holding nothing afterwards.
func TestReplicatedHashJoinSpillsOnEachNode(t *testing.T) {
	col := func(n string) Expr { return aggCol(spillTestSchema, n) }
	left := spillTestSource(t, 800, 4, 10, 11)
	right := spillTestSource(t, 1500, 2, 10, 12)
	whole, err := NewHashJoin(left, right, LeftJoin, []Expr{col("s")}, []Expr{col("s")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	free, _ := limitedContext(t, 16, 0)
	want, err := runRows(context.Background(), whole, free)
	if err != nil {
		t.Fatal(err)
	}
	right.executions.Store(0)
	join, err := NewReplicatedHashJoin(left, right, Placement{Scan: 0}, LeftJoin, []Expr{col("s")}, []Expr{col("s")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc, pool := limitedContext(t, 16, 48<<10)
	owners := [][]int{{0, 1, 0, 1}}
	var got []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	for node := range 2 {
		ntc := *tc
		ntc.Cache = NewQueryCache()
		ntc.Exchange = &loopExchange{nodes: 2, self: node, owners: owners}
		for _, p := range []int{node, node + 2} {
			wg.Go(func() {
				rows, err := runPartition(join, p, &ntc)
				mu.Lock()
				got = append(got, rows...)
				mu.Unlock()
				errc <- err
			})
		}
		defer ntc.Cache.Release()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	sameRowSet(t, got, want)
	if pool.Stats().Refusals == 0 {
		t.Fatal("the build side fit: nothing spilled")
	}
	if n := right.executions.Load(); n != 2*2 {
		t.Errorf("the right side's partitions were executed %d times, want 4 (one build per node)", n)
	}
}

// runPartition returns the rows of partition p of op.
func runPartition(op Operator, p int, tc *TaskContext) ([]string, error) {
	rdr, err := op.Execute(context.Background(), p, tc)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var rows []string
	for rdr.Next() {
		rows = append(rows, formatRows(rdr.RecordBatch())...)
	}
	return rows, rdr.Err()
}
