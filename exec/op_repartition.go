package exec

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"golang.org/x/sync/errgroup"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/safe"
	"github.com/cachedb/cachedb/internal/stream"
)

// repartitionBuffer is how many batches may wait for each output partition's consumer.
const repartitionBuffer = 2

// Repartition redistributes its input's rows into n partitions: by a hash of the key columns
// (rows with equal keys, NULLs included, land in the same partition) or, without keys, whole
// batches round-robin.
//
// Runs: the input is executed once for all n output partitions. The first Execute call for a
// given *TaskContext starts a run (producers for every input partition, writing into n bounded
// channels); the next Execute calls with the same *TaskContext consume the run's other
// partitions, and once all n have been claimed the next call starts a new run. Consumers of one
// run must therefore share a TaskContext, read their partitions concurrently (a partition whose
// reader is not drained holds back the producers once its buffer is full), and execute every
// one of the n partitions; Coalesce, the joins and subqueries give each of their executions a
// private TaskContext for that reason. Executing a partition twice within one run is an error.
//
// Stopping: a consumer that releases its reader stops receiving (its batches are dropped and
// released); when all n readers are released, or the first consumer's ctx is canceled, the
// producers stop. The last Release returns after the producers have exited.
type Repartition struct {
	input  Operator
	keys   []Expr
	n      int
	mu     sync.Mutex
	active map[*TaskContext]*repartitionRun
}

// NewRepartition returns an operator with n partitions (at least 1) holding input's rows,
// hash-partitioned by keys (round-robin when keys is empty).
func NewRepartition(input Operator, keys []Expr, n int) Operator {
	return &Repartition{input: input, keys: keys, n: max(n, 1), active: map[*TaskContext]*repartitionRun{}}
}

func (r *Repartition) Schema() *arrow.Schema { return r.input.Schema() }
func (r *Repartition) Children() []Operator  { return []Operator{r.input} }
func (r *Repartition) Partitions() int       { return r.n }

func (r *Repartition) String() string {
	if len(r.keys) == 0 {
		return fmt.Sprintf("Repartition: round-robin into %d", r.n)
	}
	parts := make([]string, len(r.keys))
	for i, k := range r.keys {
		parts[i] = k.String()
	}
	return fmt.Sprintf("Repartition: hash(%s) into %d", strings.Join(parts, ", "), r.n)
}

func (r *Repartition) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	if partition < 0 || partition >= r.n {
		return nil, errs.Internalf("repartition has %d partitions, asked for %d", r.n, partition)
	}
	run, err := r.claim(ctx, partition, tc)
	if err != nil {
		return nil, err
	}
	pull := func() (arrow.RecordBatch, error) {
		select {
		case b, ok := <-run.outs[partition]:
			if !ok {
				return nil, run.err
			}
			return b, nil
		case <-ctx.Done():
			return nil, stream.Stopped(ctx)
		}
	}
	return stream.Pull(ctx, r.Schema(), pull, func() { run.release(partition) }), nil
}

// claim returns the run that partition belongs to for tc, starting one if none is active.
func (r *Repartition) claim(ctx context.Context, partition int, tc *TaskContext) (*repartitionRun, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.active[tc]
	if run == nil {
		run = r.start(ctx, tc)
		r.active[tc] = run
	}
	if run.claimed[partition] {
		return nil, errs.Internalf("repartition partition %d executed twice in one run", partition)
	}
	run.claimed[partition] = true
	run.unclaimed--
	if run.unclaimed == 0 {
		delete(r.active, tc)
	}
	return run, nil
}

// repartitionRun is one execution of the input feeding n consumers.
type repartitionRun struct {
	outs      []chan arrow.RecordBatch
	gone      []chan struct{} // closed when that partition's consumer released its reader
	claimed   []bool          // guarded by Repartition.mu
	unclaimed int             // guarded by Repartition.mu
	cancel    context.CancelFunc
	done      chan struct{} // closed after the producers exited and outs were closed
	err       error         // the producers' error, readable once done is closed

	mu       sync.Mutex
	released int
	drains   sync.WaitGroup
}

// start launches the producers of a new run.
func (r *Repartition) start(ctx context.Context, tc *TaskContext) *repartitionRun {
	run := &repartitionRun{
		outs:      make([]chan arrow.RecordBatch, r.n),
		gone:      make([]chan struct{}, r.n),
		claimed:   make([]bool, r.n),
		unclaimed: r.n,
		done:      make(chan struct{}),
	}
	for i := range r.n {
		run.outs[i] = make(chan arrow.RecordBatch, repartitionBuffer)
		run.gone[i] = make(chan struct{})
	}
	runTC := *tc
	pctx, cancel := context.WithCancel(ctx)
	run.cancel = cancel
	group, gctx := errgroup.WithContext(pctx)
	for p := range r.input.Partitions() {
		safe.Go(group, "repartition", func() error { return r.produce(gctx, p, &runTC, run) })
	}
	safe.Spawn("repartition", group.Wait, func(err error) {
		run.err = err
		for _, out := range run.outs {
			close(out)
		}
		close(run.done)
	})
	return run
}

// produce reads input partition p and routes its rows to the run's outputs.
func (r *Repartition) produce(ctx context.Context, p int, tc *TaskContext, run *repartitionRun) error {
	next := p % r.n
	return eachBatch(ctx, r.input, p, tc, func(b arrow.RecordBatch) error {
		if len(r.keys) == 0 || r.n == 1 {
			err := run.send(ctx, next, b)
			next = (next + 1) % r.n
			return err
		}
		err := r.route(ctx, tc, b, run)
		b.Release()
		return err
	})
}

// route splits b by key hash and sends each non-empty piece to its partition.
func (r *Repartition) route(ctx context.Context, tc *TaskContext, b arrow.RecordBatch, run *repartitionRun) error {
	rows, err := hashPartitionRows(ctx, tc, b, r.keys, r.n)
	if err != nil {
		return err
	}
	for p, idx := range rows {
		if len(idx) == 0 {
			continue
		}
		if len(idx) == int(b.NumRows()) {
			b.Retain()
			return run.send(ctx, p, b)
		}
		piece, err := takeBatchRows(ctx, tc, b, idx)
		if err != nil {
			return err
		}
		if err := run.send(ctx, p, piece); err != nil {
			return err
		}
	}
	return nil
}

// send hands b to partition p's consumer, or releases it when that consumer has gone.
func (run *repartitionRun) send(ctx context.Context, p int, b arrow.RecordBatch) error {
	select {
	case <-run.gone[p]:
		b.Release()
		return nil
	default:
	}
	select {
	case run.outs[p] <- b:
		return nil
	case <-run.gone[p]:
		b.Release()
		return nil
	case <-ctx.Done():
		b.Release()
		return stream.Stopped(ctx)
	}
}

// release is called once per consumer when its reader is released. Batches still queued for it
// are released by a drainer; the last consumer stops the producers and waits for them and for
// every drainer.
func (run *repartitionRun) release(p int) {
	close(run.gone[p])
	run.mu.Lock()
	run.released++
	last := run.released == len(run.outs)
	if !last {
		// Added under the lock so that it happens before the last consumer's Wait.
		run.drains.Add(1)
	}
	run.mu.Unlock()
	drain := func() {
		for b := range run.outs[p] {
			b.Release()
		}
	}
	if !last {
		safe.Spawn("repartition drain", func() error {
			defer run.drains.Done()
			drain()
			return nil
		}, nil)
		return
	}
	run.cancel()
	drain()
	<-run.done
	run.drains.Wait()
}

// hashPartitionRows assigns each row of b to one of n partitions by a hash of its key values.
func hashPartitionRows(ctx context.Context, tc *TaskContext, b arrow.RecordBatch, keys []Expr, n int) ([][]int32, error) {
	cols := make([]arrow.Array, 0, len(keys))
	defer func() { releaseAll(cols) }()
	for _, k := range keys {
		c, err := k.Eval(ctx, tc, b)
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	enc, err := NewRowKeyEncoder(cols)
	if err != nil {
		return nil, err
	}
	out := make([][]int32, n)
	var buf []byte
	for row := range int(b.NumRows()) {
		buf = enc.Append(buf[:0], row)
		p := fnv1a(buf) % uint64(n)
		out[p] = append(out[p], int32(row))
	}
	return out, nil
}

// fnv1a is the 64-bit FNV-1a hash. It is fixed (not seeded per process) so that partition
// assignment is the same on every node.
func fnv1a(data []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range data {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}
