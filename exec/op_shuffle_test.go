package exec

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// loopExchange runs the producer side of every node in this process: node i of a shuffle is one
// ShuffleOutput started with an exchange whose Self is i. It is the exec-level stand-in for the
// Flight transport, which the flightsql tests exercise with real servers.
type loopExchange struct {
	nodes  int
	self   int
	owners [][]int
	shared *loopOutputs
	tc     *TaskContext
}

type loopOutputs struct {
	mu   sync.Mutex
	op   map[int]*Shuffle
	outs map[[2]int]*ShuffleOutput // (shuffle, node)
}

func (x *loopExchange) Nodes() int { return x.nodes }
func (x *loopExchange) Self() int  { return x.self }
func (x *loopExchange) TaskOwners(scan int) ([]int, error) {
	return x.owners[scan], nil
}

func (x *loopExchange) Fetch(ctx context.Context, node, shuffle, bucket int) (array.RecordReader, error) {
	x.shared.mu.Lock()
	out := x.shared.outs[[2]int{shuffle, node}]
	if out == nil {
		tc := *x.tc
		tc.Exchange = &loopExchange{nodes: x.nodes, self: node, owners: x.owners, shared: x.shared, tc: x.tc}
		out = StartShuffle(context.Background(), x.shared.op[shuffle], &tc)
		x.shared.outs[[2]int{shuffle, node}] = out
	}
	x.shared.mu.Unlock()
	rdr, ok, err := out.Claim(ctx, bucket)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("bucket %d of node %d read twice", bucket, node)
	}
	return rdr, nil
}

func (s *loopOutputs) closeAll() {
	for _, out := range s.outs {
		out.Close()
	}
}

// Every row reaches exactly one bucket, and rows with equal keys reach the same one, whatever
// node read them.
func TestShuffleMovesEveryRowOnce(t *testing.T) {
	for _, keyed := range []bool{true, false} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			tc := newTestContext(t, 0)
			src, want := manyRowsSource(t, tc, 5, 3, 30)
			var keys []Expr
			if keyed {
				keys = []Expr{intCol(0, "key")}
			}
			shuffle := NewShuffle(0, src, Placement{Scan: 0}, keys, 3)
			shared := &loopOutputs{op: map[int]*Shuffle{0: shuffle}, outs: map[[2]int]*ShuffleOutput{}}
			defer shared.closeAll()
			ex := &loopExchange{nodes: 3, self: -1, owners: [][]int{{0, 1, 2, 0, 2}}, shared: shared, tc: tc}
			run := *tc
			run.Exchange = ex
			var got []string
			keysAt := map[string]int{}
			for b := range shuffle.Partitions() {
				rows := collectRows(t, &partitionOf{op: shuffle, p: b}, &run)
				for _, r := range rows {
					key := r[:1]
					if prev, ok := keysAt[key]; ok && prev != b && keyed {
						t.Errorf("key %s in buckets %d and %d", key, prev, b)
					}
					keysAt[key] = b
				}
				got = append(got, rows...)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("got %d rows, want %d", len(got), len(want))
			}
			if n := src.executions.Load(); n != 5 {
				t.Errorf("input partitions executed %d times, want 5 (each by its owner)", n)
			}
			if !keyed && shuffle.Partitions() != 1 {
				t.Errorf("a keyless shuffle has %d partitions, want 1", shuffle.Partitions())
			}
		})
	}
}

func TestShuffleOutputBucketReadOnce(t *testing.T) {
	tc := newTestContext(t, 0)
	src, _ := manyRowsSource(t, tc, 2, 2, 10)
	shuffle := NewShuffle(0, src, Buckets, []Expr{intCol(0, "key")}, 2)
	run := *tc
	run.Exchange = &loopExchange{nodes: 2, self: 0}
	out := StartShuffle(context.Background(), shuffle, &run)
	defer out.Close()
	first, ok, err := out.Claim(context.Background(), 0)
	if err != nil || !ok {
		t.Fatalf("first claim: %v %v", ok, err)
	}
	if _, ok, err := out.Claim(context.Background(), 0); ok || err != nil {
		t.Errorf("second claim of bucket 0: ok=%v err=%v, want refused", ok, err)
	}
	if _, _, err := out.Claim(context.Background(), 7); err == nil {
		t.Error("claim of a bucket that does not exist succeeded")
	}
	first.Release()
	if out.Drained() {
		t.Error("drained before bucket 1 was read")
	}
	second, ok, _ := out.Claim(context.Background(), 1)
	if !ok {
		t.Fatal("bucket 1 refused")
	}
	second.Release()
	if !out.Drained() {
		t.Error("not drained after both buckets were read")
	}
}

// Closing an output with unread buckets frees every batch it held (the checked allocator of
// newTestContext reports leaks).
func TestShuffleOutputCloseReleasesUnread(t *testing.T) {
	tc := newTestContext(t, 0)
	src, _ := manyRowsSource(t, tc, 3, 4, 25)
	shuffle := NewShuffle(0, src, Buckets, []Expr{intCol(0, "key")}, 3)
	run := *tc
	run.Exchange = &loopExchange{nodes: 1, self: 0}
	out := StartShuffle(context.Background(), shuffle, &run)
	rdr, _, _ := out.Claim(context.Background(), 0)
	out.Close()
	for rdr.Next() {
	}
	rdr.Release()
}

// partitionOf exposes one partition of op as a single-partition operator.
type partitionOf struct {
	op Operator
	p  int
}

func (o *partitionOf) Schema() *arrow.Schema { return o.op.Schema() }
func (o *partitionOf) Children() []Operator  { return []Operator{o.op} }
func (o *partitionOf) Partitions() int       { return 1 }
func (o *partitionOf) String() string        { return "Partition" }
func (o *partitionOf) Execute(ctx context.Context, _ int, tc *TaskContext) (array.RecordReader, error) {
	return o.op.Execute(ctx, o.p, tc)
}

// A broadcast gives every node all the rows, each input partition read once (by its owner).
func TestBroadcastGivesEveryNodeEveryRow(t *testing.T) {
	tc := newTestContext(t, 0)
	src, want := manyRowsSource(t, tc, 5, 3, 30)
	b := NewBroadcast(0, src, Placement{Scan: 0}, Buckets, 3)
	if b.Partitions() != 1 {
		t.Fatalf("a broadcast has %d partitions, want 1", b.Partitions())
	}
	shared := &loopOutputs{op: map[int]*Shuffle{0: b}, outs: map[[2]int]*ShuffleOutput{}}
	defer shared.closeAll()
	for node := range 3 {
		run := *tc
		run.Exchange = &loopExchange{nodes: 3, self: node, owners: [][]int{{0, 1, 2, 0, 2}}, shared: shared, tc: tc}
		got := collectRows(t, &partitionOf{op: b, p: 0}, &run)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("node %d read %d rows, want all %d", node, len(got), len(want))
		}
	}
	if n := src.executions.Load(); n != 5 {
		t.Errorf("input partitions executed %d times, want 5 (each by its owner)", n)
	}
	head := *tc
	head.Exchange = &loopExchange{nodes: 3, self: -1, shared: shared, tc: tc}
	if _, err := b.Execute(context.Background(), 0, &head); err == nil {
		t.Error("the head read a broadcast")
	}
}

// A broadcast read by an operator placed on some nodes only copies the rows to those nodes:
// a node that runs none of the reader's partitions gets nothing buffered for it.
func TestBroadcastOnlyToReadingNodes(t *testing.T) {
	tc := newTestContext(t, 0)
	src, want := manyRowsSource(t, tc, 5, 3, 30)
	b := NewBroadcast(0, src, Placement{Scan: 0}, Placement{Scan: 1}, 3)
	shared := &loopOutputs{op: map[int]*Shuffle{0: b}, outs: map[[2]int]*ShuffleOutput{}}
	defer shared.closeAll()
	owners := [][]int{{0, 1, 2, 0, 2}, {2, 0, 2}} // scan 1, the readers, runs on nodes 0 and 2
	for _, node := range []int{0, 2, 1} {
		run := *tc
		run.Exchange = &loopExchange{nodes: 3, self: node, owners: owners, shared: shared, tc: tc}
		got := collectRows(t, &partitionOf{op: b, p: 0}, &run)
		slices.Sort(got)
		if node != 1 && !slices.Equal(got, want) {
			t.Fatalf("node %d read %d rows, want all %d", node, len(got), len(want))
		}
		if node == 1 && len(got) != 0 {
			t.Fatalf("node 1, which runs no reader, was sent %d rows", len(got))
		}
	}
}
