package exec

import (
	"context"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/safe"
	"github.com/cachedb/cachedb/internal/stream"
)

// ShuffleOutput is one run of a Shuffle's producer side on one node: it runs Produce in the
// background and keeps each bucket's batches until that bucket's one reader takes them.
//
// Buffering is unbounded on purpose: the readers of different buckets are other nodes, driven by
// clients that may read one endpoint after another, so a producer that waited for a slow bucket
// could hold back the bucket that is being read and deadlock the query. What a shuffle moves is
// a node's share of partial aggregates or of a join's inputs; it is held in memory only until read.
//
// Each bucket is read at most once per run: Claim of a claimed bucket reports false, and the
// caller starts a new run for a second read (a retried endpoint).
type ShuffleOutput struct {
	schema *arrow.Schema
	cancel context.CancelFunc
	done   chan struct{} // closed when Produce has returned

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever a batch arrives or production ends
	buckets  [][]arrow.RecordBatch
	claimed  []bool
	released []bool
	finished bool
	err      error
}

// StartShuffle starts producing s's buckets on the node tc.Exchange.Self(). Production runs
// until it ends or ctx is canceled (or Close is called).
func StartShuffle(ctx context.Context, s *Shuffle, tc *TaskContext) *ShuffleOutput {
	ctx, cancel := context.WithCancel(ctx)
	o := &ShuffleOutput{
		schema:   s.Schema(),
		cancel:   cancel,
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
		buckets:  make([][]arrow.RecordBatch, s.n),
		claimed:  make([]bool, s.n),
		released: make([]bool, s.n),
	}
	produce := func() error { return s.Produce(ctx, tc, o.emit) }
	safe.Spawn("shuffle producer", produce, func(err error) {
		defer close(o.done)
		o.mu.Lock()
		o.finished, o.err = true, err
		o.notifyLocked()
		o.mu.Unlock()
	})
	return o
}

func (o *ShuffleOutput) emit(bucket int, b arrow.RecordBatch) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.released[bucket] {
		b.Release()
		return nil
	}
	o.buckets[bucket] = append(o.buckets[bucket], b)
	o.notifyLocked()
	return nil
}

func (o *ShuffleOutput) notifyLocked() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// Claim returns a reader over one bucket, streaming its batches as they are produced and ending
// with the producer's error, if any. It reports false when the bucket was claimed before.
func (o *ShuffleOutput) Claim(ctx context.Context, bucket int) (array.RecordReader, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if bucket < 0 || bucket >= len(o.buckets) {
		return nil, false, errs.Invalidf("shuffle has %d buckets, asked for %d", len(o.buckets), bucket)
	}
	if o.claimed[bucket] {
		return nil, false, nil
	}
	o.claimed[bucket] = true
	pull := func() (arrow.RecordBatch, error) {
		for {
			o.mu.Lock()
			if q := o.buckets[bucket]; len(q) > 0 {
				b := q[0]
				q[0] = nil
				o.buckets[bucket] = q[1:]
				o.mu.Unlock()
				return b, nil
			}
			if o.finished {
				err := o.err
				o.mu.Unlock()
				return nil, err
			}
			changed := o.changed
			o.mu.Unlock()
			select {
			case <-changed:
			case <-ctx.Done():
				return nil, stream.Stopped(ctx)
			}
		}
	}
	stop := func() {
		o.mu.Lock()
		o.released[bucket] = true
		releaseBatches(o.buckets[bucket])
		o.buckets[bucket] = nil
		o.mu.Unlock()
	}
	return stream.Pull(ctx, o.schema, pull, stop), true, nil
}

// Drained reports whether every bucket has been claimed and its reader released: nothing more
// can be asked of this run.
func (o *ShuffleOutput) Drained() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.released {
		if !r {
			return false
		}
	}
	return true
}

// Close stops production, waits for it to end and releases every batch not yet read. Readers
// still open end with an error.
func (o *ShuffleOutput) Close() {
	o.cancel()
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, q := range o.buckets {
		releaseBatches(q)
		o.buckets[i] = nil
		o.released[i] = true
	}
	if o.err == nil {
		o.err = errs.Unavailablef("the shuffle's producer was stopped before this bucket was read")
	}
}
