package exec

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/util"
	"golang.org/x/sync/errgroup"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/internal/safe"
	"github.com/cachedb/cachedb/internal/stream"
)

// Coalesce merges all partitions of its input into one. The input partitions are read
// concurrently (one goroutine each) into a channel holding at most one batch per input
// partition, so a slow consumer holds back the producers instead of buffering without bound.
// Releasing the reader early, or canceling ctx, stops the producers and releases every batch
// still in flight; Release returns only after the producers have exited.
type Coalesce struct {
	input Operator
}

// NewCoalesce returns an operator with one partition that yields every batch of every
// partition of input, in no particular order.
func NewCoalesce(input Operator) Operator {
	return &Coalesce{input: input}
}

func (c *Coalesce) Schema() *arrow.Schema { return c.input.Schema() }
func (c *Coalesce) Children() []Operator  { return []Operator{c.input} }
func (c *Coalesce) Partitions() int       { return 1 }
func (c *Coalesce) String() string {
	return fmt.Sprintf("Coalesce: %d partitions", c.input.Partitions())
}

// Execute starts one producer per input partition. All of them share a private copy of tc, so
// that the input's partitions form one run of any Repartition below (see Repartition) that no
// other consumer can interleave with.
func (c *Coalesce) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	if partition != 0 {
		return nil, errs.Internalf("coalesce has 1 partition, asked for %d", partition)
	}
	runTC := *tc
	n := c.input.Partitions()
	cctx, cancel := context.WithCancel(ctx)
	group, gctx := errgroup.WithContext(cctx)
	batches := make(chan arrow.RecordBatch, max(n, 1))
	for p := range n {
		safe.Go(group, "coalesce", func() error { return produceInto(gctx, c.input, p, &runTC, batches) })
	}
	var groupErr error
	safe.Spawn("coalesce", group.Wait, func(err error) {
		groupErr = err
		close(batches)
	})
	pull := func() (arrow.RecordBatch, error) {
		b, ok := <-batches
		if !ok {
			return nil, groupErr
		}
		return b, nil
	}
	stop := func() {
		cancel()
		for b := range batches {
			b.Release()
		}
	}
	return stream.Pull(ctx, c.Schema(), pull, stop), nil
}

// produceInto executes partition p of op and sends its non-empty batches to out until the
// partition ends or ctx is canceled.
func produceInto(ctx context.Context, op Operator, p int, tc *TaskContext, out chan<- arrow.RecordBatch) error {
	return eachBatch(ctx, op, p, tc, func(b arrow.RecordBatch) error {
		select {
		case out <- b:
			return nil
		case <-ctx.Done():
			b.Release()
			return stream.Stopped(ctx)
		}
	})
}

// eachBatch executes partition p of op and hands its non-empty batches, in order, to fn, which
// owns each; it ends at the partition's end, at a read error, or at fn's first error.
func eachBatch(ctx context.Context, op Operator, p int, tc *TaskContext, fn func(arrow.RecordBatch) error) error {
	rdr, err := op.Execute(ctx, p, tc)
	if err != nil {
		return err
	}
	defer rdr.Release()
	for {
		b, err := nextNonEmpty(rdr)
		if b == nil || err != nil {
			return err
		}
		if err := fn(b); err != nil {
			return err
		}
	}
}

// executeMerged executes every partition of op and returns one reader over all their rows. It
// gives op a private copy of tc (see Coalesce.Execute), so it is safe to call repeatedly with the
// same tc, e.g. once per evaluation of a subquery.
func executeMerged(ctx context.Context, op Operator, tc *TaskContext) (array.RecordReader, error) {
	if op.Partitions() == 1 {
		runTC := *tc
		return op.Execute(ctx, 0, &runTC)
	}
	return NewCoalesce(op).Execute(ctx, 0, tc)
}

// collectReserved executes every partition of op and returns all its non-empty batches (the
// caller releases them), reserving factor times each batch's size from res before holding it;
// a refused reservation fails with the refusal, releasing what was collected (res keeps what it
// had reserved: its owner frees it).
func collectReserved(ctx context.Context, op Operator, tc *TaskContext, res *mempool.Reservation, factor int64) ([]arrow.RecordBatch, error) {
	rdr, err := executeMerged(ctx, op, tc)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var out []arrow.RecordBatch
	for {
		b, err := nextNonEmpty(rdr)
		if err == nil && b != nil {
			if err = res.TryGrow(factor * util.TotalRecordSize(b)); err != nil {
				b.Release()
			}
		}
		if err != nil {
			releaseBatches(out)
			return nil, err
		}
		if b == nil {
			return out, nil
		}
		out = append(out, b)
	}
}

// releaseBatches releases every batch.
func releaseBatches(bs []arrow.RecordBatch) {
	for _, b := range bs {
		b.Release()
	}
}

// collectPartitions executes every partition of input concurrently, as one run (the caller's
// copy of tc, as Coalesce does, so a Repartition below sees one run), and returns each one's
// non-empty batches, each reserved by res at size(batch) bytes. On error it releases what it
// kept (res keeps what it grew; its owner frees it). where names the goroutines.
func collectPartitions(ctx context.Context, input Operator, runTC *TaskContext, res *mempool.Reservation, size func(arrow.RecordBatch) int64, where string) ([][]arrow.RecordBatch, error) {
	parts := make([][]arrow.RecordBatch, input.Partitions())
	var mu sync.Mutex // guards res
	group, gctx := errgroup.WithContext(ctx)
	for p := range parts {
		safe.Go(group, where, func() error {
			return eachBatch(gctx, input, p, runTC, func(b arrow.RecordBatch) error {
				mu.Lock()
				err := res.TryGrow(size(b))
				mu.Unlock()
				if err != nil {
					b.Release()
					return err
				}
				parts[p] = append(parts[p], b)
				return nil
			})
		})
	}
	if err := group.Wait(); err != nil {
		for _, part := range parts {
			releaseBatches(part)
		}
		return nil, err
	}
	return parts, nil
}
