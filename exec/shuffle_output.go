package exec

import (
	"context"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/internal/safe"
	"github.com/cachedb/cachedb/internal/stream"
)

// ShuffleOutput is one run of a Shuffle's producer side on one node: it runs Produce in the
// background and keeps each bucket's batches until that bucket's one reader takes them.
//
// Every batch held is reserved from the query's memory group (tc.Memory, consumer "shuffle
// buffers") until its reader takes it or the run ends, so held buckets count toward the
// session's and the process's memory limits. A refused reservation fails the run with the
// refusal (RESOURCE_EXHAUSTED) unless waiting can help (below).
//
// Back-pressure. A bucket holding its bound (bucketBytes, DefaultShuffleBucketBytes) or more
// makes the producer wait until its reader drains it, but only while no reader of this run is
// waiting on an empty bucket of it. The readers of different buckets are other nodes, driven by
// clients that may read one endpoint after another: a reader of bucket 0 may need all of this
// run's bucket 0 before anyone reads bucket 1. A producer stalled on a full bucket 1 while that
// reader waits would deadlock the query; instead, a waiting reader lets the producer go past the
// bound (it must make progress for that reader), and the bound holds again once no reader is
// starved. So:
//   - an empty bucket always takes one batch, whatever its size (the bound is per bucket, and a
//     batch larger than the bound is never stuck);
//   - the producer waits only while (a) some bucket is at its bound, or a reservation was refused
//     and this run holds batches a reader can free, and (b) no reader waits on this run;
//   - it waits with its context, so a canceled execution never leaves it stuck.
//
// With N producers × M buckets and readers that read bucket 0 of every producer before bucket
// 1, each producer runs ahead of the bound exactly as far as its bucket-0 reader needs; with
// readers that read every bucket at once (a Coalesce of the buckets), each bucket holds about
// its bound. The memory limit is the hard bound either way.
//
// Each bucket is read at most once per run: Claim of a claimed bucket reports false, and the
// caller starts a new run for a second read (a retried endpoint).
type ShuffleOutput struct {
	schema *arrow.Schema
	cancel context.CancelFunc
	done   chan struct{} // closed when Produce has returned
	bound  int64

	// memMu guards mem, which the producer grows and readers shrink; never held with mu.
	memMu sync.Mutex
	mem   *mempool.Reservation

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever a bucket or a reader changes
	buckets  [][]arrow.RecordBatch
	held     []int64 // bytes reserved for each bucket's batches
	claimed  []bool
	released []bool
	// waiting counts readers blocked on an empty bucket of this run.
	waiting int
	// stalled is true while the producer waits for its readers (back-pressure).
	stalled  bool
	finished bool
	err      error
}

// DefaultShuffleBucketBytes is the bound of one bucket of a shuffle run (see ShuffleOutput).
const DefaultShuffleBucketBytes = 8 << 20

// shuffleBuffers is the consumer the batches a shuffle holds are reserved for.
var shuffleBuffers = mempool.Consumer{Name: "shuffle buffers"}

// StartShuffle starts producing s's buckets on the node tc.Exchange.Self(), each bucket bounded
// by DefaultShuffleBucketBytes. Production runs until it ends or ctx is canceled (or Close is
// called).
func StartShuffle(ctx context.Context, s *Shuffle, tc *TaskContext) *ShuffleOutput {
	return StartShuffleBounded(ctx, s, tc, DefaultShuffleBucketBytes)
}

// StartShuffleBounded is StartShuffle with each bucket bounded by bucketBytes (<= 0: the
// default).
func StartShuffleBounded(ctx context.Context, s *Shuffle, tc *TaskContext, bucketBytes int64) *ShuffleOutput {
	if bucketBytes <= 0 {
		bucketBytes = DefaultShuffleBucketBytes
	}
	ctx, cancel := context.WithCancel(ctx)
	o := &ShuffleOutput{
		schema:   s.Schema(),
		cancel:   cancel,
		done:     make(chan struct{}),
		bound:    bucketBytes,
		mem:      tc.Reserve(shuffleBuffers),
		changed:  make(chan struct{}),
		buckets:  make([][]arrow.RecordBatch, s.n),
		held:     make([]int64, s.n),
		claimed:  make([]bool, s.n),
		released: make([]bool, s.n),
	}
	produce := func() error {
		return s.Produce(ctx, tc, func(bucket int, b arrow.RecordBatch) error { return o.emit(ctx, bucket, b) })
	}
	safe.Spawn("shuffle producer", produce, func(err error) {
		defer close(o.done)
		o.mu.Lock()
		o.finished, o.err = true, err
		o.notifyLocked()
		o.mu.Unlock()
	})
	return o
}

// emit keeps b for its bucket's reader, waiting first as the type's comment says. It owns b.
func (o *ShuffleOutput) emit(ctx context.Context, bucket int, b arrow.RecordBatch) error {
	size := batchBytes(b)
	for {
		o.mu.Lock()
		if o.released[bucket] {
			o.mu.Unlock()
			b.Release()
			return nil
		}
		starved := o.waiting > 0
		full := o.held[bucket] > 0 && o.held[bucket]+size > o.bound
		holding := o.holdingLocked()
		changed := o.changed
		o.mu.Unlock()

		var refused error
		if !full || starved {
			if refused = o.grow(size); refused == nil {
				o.mu.Lock()
				if o.released[bucket] { // its reader went away meanwhile
					o.mu.Unlock()
					o.shrink(size)
					b.Release()
					return nil
				}
				o.buckets[bucket] = append(o.buckets[bucket], b)
				o.held[bucket] += size
				o.notifyLocked()
				o.mu.Unlock()
				return nil
			}
			if starved || !holding {
				// Nothing this run holds can be freed for it, or a reader needs it to go on.
				b.Release()
				return refused
			}
		}
		o.setStalled(true)
		select {
		case <-changed:
			o.setStalled(false)
		case <-ctx.Done():
			o.setStalled(false)
			b.Release()
			return stream.Stopped(ctx)
		}
	}
}

func (o *ShuffleOutput) setStalled(v bool) {
	o.mu.Lock()
	o.stalled = v
	o.mu.Unlock()
}

// holdingLocked reports whether some bucket holds batches a reader can take.
func (o *ShuffleOutput) holdingLocked() bool {
	for i, n := range o.held {
		if n > 0 && !o.released[i] {
			return true
		}
	}
	return false
}

func (o *ShuffleOutput) grow(n int64) error {
	o.memMu.Lock()
	defer o.memMu.Unlock()
	return o.mem.TryGrow(n)
}

func (o *ShuffleOutput) shrink(n int64) {
	o.memMu.Lock()
	o.mem.Shrink(n)
	o.memMu.Unlock()
}

func (o *ShuffleOutput) notify() {
	o.mu.Lock()
	o.notifyLocked()
	o.mu.Unlock()
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
		// A reader counts as waiting from the moment it finds its bucket empty until it
		// leaves: counted once, so that readers woken by a change they cannot use go back to
		// sleep without waking each other (each counting itself again woke all the others,
		// which did the same: two readers of empty buckets kept a core busy between them).
		waiting := false
		defer func() {
			if waiting {
				o.mu.Lock()
				o.waiting--
				o.mu.Unlock()
			}
		}()
		for {
			o.mu.Lock()
			if q := o.buckets[bucket]; len(q) > 0 {
				b := q[0]
				q[0] = nil
				o.buckets[bucket] = q[1:]
				size := batchBytes(b)
				o.held[bucket] -= size
				o.mu.Unlock()
				// Given back before the producer hears of it, so that its retry can use it.
				o.shrink(size)
				o.notify()
				return b, nil
			}
			if o.finished {
				err := o.err
				o.mu.Unlock()
				return nil, err
			}
			if !waiting {
				// Waiting on an empty bucket: the producer must not stall on a full one now.
				// It decides by whether any reader waits, so only the first one wakes it.
				waiting = true
				o.waiting++
				if o.waiting == 1 {
					o.notifyLocked()
				}
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
		held := o.held[bucket]
		o.held[bucket] = 0
		o.mu.Unlock()
		o.shrink(held)
		o.notify()
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

// Close stops production, waits for it to end, releases every batch not yet read and gives
// their memory back. Readers still open end with an error.
func (o *ShuffleOutput) Close() {
	o.cancel()
	<-o.done
	o.mu.Lock()
	for i, q := range o.buckets {
		releaseBatches(q)
		o.buckets[i] = nil
		o.held[i] = 0
		o.released[i] = true
	}
	if o.err == nil {
		o.err = errs.Unavailablef("the shuffle's producer was stopped before this bucket was read")
	}
	o.notifyLocked()
	o.mu.Unlock()
	o.memMu.Lock()
	o.mem.Free()
	o.memMu.Unlock()
}

// Held is what the run's buckets hold now, in bytes.
func (o *ShuffleOutput) Held() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var n int64
	for _, h := range o.held {
		n += h
	}
	return n
}
