package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"golang.org/x/sync/errgroup"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/safe"
)

// Exchange connects the Shuffle operators of one distributed execution of a query with the data
// nodes that take part in it. Every node plans the same query with the same snapshots, so the
// Shuffles and the distributed scans are numbered alike everywhere (in planning order).
type Exchange interface {
	// Nodes is how many data nodes take part. The buckets of a shuffle into Nodes() partitions
	// are run by the node of the same index.
	Nodes() int
	// Self is this process's index among the nodes, or -1 when it is not one of them (the head).
	Self() int
	// TaskOwners gives, for the scan-th distributed scan of the plan, the node that reads each
	// of its tasks.
	TaskOwners(scan int) ([]int, error)
	// Fetch opens the rows that node produced for one bucket of a shuffle.
	Fetch(ctx context.Context, node, shuffle, bucket int) (array.RecordReader, error)
}

// Placement says where the partitions of a distributed operator run.
type Placement struct {
	// Scan is the index of the distributed scan whose tasks are the partitions, placed by
	// Exchange.TaskOwners; -1 when the partitions are buckets of a shuffle, partition p run by
	// node p.
	Scan int
}

// Buckets is the placement of a shuffle's output: partition p is run by node p.
var Buckets = Placement{Scan: -1}

// Owned returns which of the n partitions of an operator placed at pl the node ex.Self() runs,
// in increasing order.
func (pl Placement) Owned(ex Exchange, n int) ([]int, error) {
	self := ex.Self()
	if self < 0 {
		return nil, errs.Internalf("a distributed stage runs only on data nodes")
	}
	var owned []int
	if pl.Scan < 0 {
		for p := self; p < n; p += max(ex.Nodes(), 1) {
			owned = append(owned, p)
		}
		return owned, nil
	}
	owners, err := ex.TaskOwners(pl.Scan)
	if err != nil {
		return nil, err
	}
	if len(owners) == 0 && n == 1 {
		// A scan without tasks (every file pruned, or an empty table) still has one partition,
		// which yields nothing (Scan.Partitions); the head placed no task, so no node runs it.
		return nil, nil
	}
	if len(owners) != n {
		return nil, errs.Internalf("distributed scan %d has %d tasks, its placement names %d", pl.Scan, n, len(owners))
	}
	for p, node := range owners {
		if node == self {
			owned = append(owned, p)
		}
	}
	return owned, nil
}

// Shuffle moves rows between data nodes: every node runs the input partitions it owns (by
// Placement) and splits their rows into n buckets, by a hash of the key columns (rows with equal
// keys, NULLs included, land in the same bucket) or, without keys, all into bucket 0; partition
// p of the Shuffle is bucket p gathered from every node. The hash is fixed, so every node splits
// alike.
//
// Execute(p) is the consumer side: it fetches bucket p from each node through the
// TaskContext's Exchange and merges the streams. Produce is the producer side, which the engine
// runs on each node when the first fetch of a bucket arrives (see ShuffleOutput).
type Shuffle struct {
	id     int
	input  Operator
	placed Placement
	keys   []Expr
	n      int
	// broadcast sends every row to the bucket of every node that runs a partition placed at
	// readers (NewBroadcast).
	broadcast bool
	readers   Placement
}

// NewShuffle returns shuffle number id of a distributed plan, moving input (whose partitions run
// where placed says) into n buckets hashed by keys (all into one bucket when keys is empty).
func NewShuffle(id int, input Operator, placed Placement, keys []Expr, n int) *Shuffle {
	if len(keys) == 0 {
		n = 1
	}
	return &Shuffle{id: id, input: input, placed: placed, keys: keys, n: max(n, 1)}
}

// NewBroadcast returns shuffle number id of a distributed plan that copies every row of input
// (whose partitions run where placed says) to the nodes, among n, that run a partition placed
// at readers (the operator reading the broadcast; a node running none would never read its
// copy, which would stay buffered until the execution ends). It has one partition, which on
// node p is bucket p gathered from every node, so every reading node reads all of input's
// rows. It is the small side of a join whose large side stays where it is (a broadcast join in
// the planner); only data nodes execute it.
func NewBroadcast(id int, input Operator, placed, readers Placement, n int) *Shuffle {
	return &Shuffle{id: id, input: input, placed: placed, n: max(n, 1), broadcast: true, readers: readers}
}

func (s *Shuffle) Schema() *arrow.Schema { return s.input.Schema() }
func (s *Shuffle) Children() []Operator  { return []Operator{s.input} }

func (s *Shuffle) Partitions() int {
	if s.broadcast {
		return 1
	}
	return s.n
}

// ID is the shuffle's number within its plan.
func (s *Shuffle) ID() int { return s.id }

func (s *Shuffle) String() string {
	if s.broadcast {
		return fmt.Sprintf("Shuffle %d: broadcast to %d data nodes", s.id, s.n)
	}
	if len(s.keys) == 0 {
		return fmt.Sprintf("Shuffle %d: gather from data nodes", s.id)
	}
	parts := make([]string, len(s.keys))
	for i, k := range s.keys {
		parts[i] = k.String()
	}
	return fmt.Sprintf("Shuffle %d: hash(%s) into %d buckets across data nodes", s.id, strings.Join(parts, ", "), s.n)
}

// Execute gathers bucket partition from every node (a broadcast: the bucket of this node).
func (s *Shuffle) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	if partition < 0 || partition >= s.Partitions() {
		return nil, errs.Internalf("shuffle has %d partitions, asked for %d", s.Partitions(), partition)
	}
	if tc.Exchange == nil {
		return nil, errs.Internalf("shuffle %d executed without a data node exchange", s.id)
	}
	bucket := partition
	if s.broadcast {
		if bucket = tc.Exchange.Self(); bucket < 0 || bucket >= s.n {
			return nil, errs.Internalf("broadcast %d read by node %d of %d: only data nodes read a broadcast", s.id, bucket, s.n)
		}
	}
	from := &shuffleSources{schema: s.Schema(), ex: tc.Exchange, shuffle: s.id, bucket: bucket}
	return NewCoalesce(from).Execute(ctx, 0, tc)
}

// Produce runs, on the node tc.Exchange.Self(), the input partitions that node owns, and hands
// each piece of their rows to emit with its bucket. emit owns the batch it is given. Produce
// returns when every owned partition has been read, or with the first error.
func (s *Shuffle) Produce(ctx context.Context, tc *TaskContext, emit func(bucket int, b arrow.RecordBatch) error) error {
	if tc.Exchange == nil {
		return errs.Internalf("shuffle %d produced without a data node exchange", s.id)
	}
	owned, err := s.placed.Owned(tc.Exchange, s.input.Partitions())
	if err != nil {
		return err
	}
	if s.broadcast {
		targets, err := s.readerNodes(tc.Exchange)
		if err != nil {
			return err
		}
		all := emit
		emit = func(_ int, b arrow.RecordBatch) error { return emitAll(targets, b, all) }
	}
	group, gctx := errgroup.WithContext(ctx)
	group.SetLimit(shuffleProducers)
	for _, p := range owned {
		safe.Go(group, "shuffle", func() error { return s.produce(gctx, p, tc, emit) })
	}
	return group.Wait()
}

// shuffleProducers bounds the input partitions one node reads at once for a shuffle.
const shuffleProducers = 4

func (s *Shuffle) produce(ctx context.Context, p int, tc *TaskContext, emit func(int, arrow.RecordBatch) error) error {
	return eachBatch(ctx, s.input, p, tc, func(b arrow.RecordBatch) error {
		if s.n == 1 || s.broadcast {
			return emit(0, b)
		}
		err := s.route(ctx, tc, b, emit)
		b.Release()
		return err
	})
}

// readerNodes returns the nodes that run a partition placed at s.readers, in increasing order.
func (s *Shuffle) readerNodes(ex Exchange) ([]int, error) {
	if s.readers.Scan < 0 {
		all := make([]int, s.n)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	owners, err := ex.TaskOwners(s.readers.Scan)
	if err != nil {
		return nil, err
	}
	reads := make([]bool, s.n)
	for _, node := range owners {
		if node >= 0 && node < s.n {
			reads[node] = true
		}
	}
	var out []int
	for node, ok := range reads {
		if ok {
			out = append(out, node)
		}
	}
	return out, nil
}

// emitAll hands b (owned) to each bucket of buckets (b is released when there is none).
func emitAll(buckets []int, b arrow.RecordBatch, emit func(int, arrow.RecordBatch) error) error {
	if len(buckets) == 0 {
		b.Release()
		return nil
	}
	for range len(buckets) - 1 {
		b.Retain()
	}
	for i, bucket := range buckets {
		if err := emit(bucket, b); err != nil {
			for range len(buckets) - 1 - i {
				b.Release()
			}
			return err
		}
	}
	return nil
}

func (s *Shuffle) route(ctx context.Context, tc *TaskContext, b arrow.RecordBatch, emit func(int, arrow.RecordBatch) error) error {
	rows, err := hashPartitionRows(ctx, tc, b, s.keys, s.n)
	if err != nil {
		return err
	}
	for bucket, idx := range rows {
		if len(idx) == 0 {
			continue
		}
		if len(idx) == int(b.NumRows()) {
			b.Retain()
			return emit(bucket, b)
		}
		piece, err := takeBatchRows(ctx, tc, b, idx)
		if err != nil {
			return err
		}
		if err := emit(bucket, piece); err != nil {
			return err
		}
	}
	return nil
}

// shuffleSources has one partition per node: partition i is what node i produced for one
// bucket of one shuffle. Coalescing it gathers the bucket.
type shuffleSources struct {
	schema  *arrow.Schema
	ex      Exchange
	shuffle int
	bucket  int
}

func (f *shuffleSources) Schema() *arrow.Schema { return f.schema }
func (f *shuffleSources) Children() []Operator  { return nil }
func (f *shuffleSources) Partitions() int       { return max(f.ex.Nodes(), 1) }
func (f *shuffleSources) String() string {
	return fmt.Sprintf("ShuffleSources: shuffle %d bucket %d", f.shuffle, f.bucket)
}

func (f *shuffleSources) Execute(ctx context.Context, node int, _ *TaskContext) (array.RecordReader, error) {
	return f.ex.Fetch(ctx, node, f.shuffle, f.bucket)
}
