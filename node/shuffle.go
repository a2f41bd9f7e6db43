package node

import (
	"context"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/stream"
)

// shuffleRuns holds the shuffle producers running on this data node, by execution and shuffle.
type shuffleRuns struct {
	mu    sync.Mutex
	byKey map[shuffleKey]*shuffleSlot
	// ends stops a running producer and frees its execution's cache.
	ends map[*exec.ShuffleOutput]func()
}

type shuffleKey struct {
	query   string
	shuffle int
}

// shuffleSlot serializes the claims and starts of one shuffle of one execution, so that the
// first fetches of its buckets, which arrive together from every node, share one producer.
type shuffleSlot struct {
	mu   sync.Mutex
	runs []*exec.ShuffleOutput
}

// ServeShuffle implements cluster.ShuffleSource: it streams this node's part of one bucket,
// from a running producer of the shuffle that has not given that bucket out yet, or from a new
// one. A producer ends when all of its buckets have been read, or when its execution ends
// (canceled, idle, expired: stageRegistry); a bucket whose reader goes away is dropped at once.
func (rt *Runtime) ServeShuffle(ctx context.Context, t cluster.ShuffleTicket) (array.RecordReader, error) {
	run, err := rt.stages.open(t.Stage)
	if err != nil {
		return nil, err
	}
	rdr, err := rt.serveShuffle(ctx, run, t)
	if err != nil {
		rt.stages.close(run)
		return nil, err
	}
	return rdr, nil
}

func (rt *Runtime) serveShuffle(ctx context.Context, run *stageRun, t cluster.ShuffleTicket) (array.RecordReader, error) {
	key := shuffleKey{query: t.Stage.Query, shuffle: t.Shuffle}
	rt.shuffles.mu.Lock()
	if rt.shuffles.byKey == nil {
		rt.shuffles.byKey = map[shuffleKey]*shuffleSlot{}
	}
	slot := rt.shuffles.byKey[key]
	if slot == nil {
		slot = &shuffleSlot{}
		rt.shuffles.byKey[key] = slot
	}
	rt.shuffles.mu.Unlock()

	slot.mu.Lock()
	defer slot.mu.Unlock()
	for _, out := range slot.runs {
		rdr, ok, err := out.Claim(ctx, t.Bucket)
		if err != nil {
			return nil, err
		}
		if ok {
			return rt.endWhenDrained(rdr, key, out, run), nil
		}
	}
	out, err := rt.startShuffle(ctx, run, t, key)
	if err != nil {
		return nil, err
	}
	slot.runs = append(slot.runs, out)
	rdr, _, err := out.Claim(ctx, t.Bucket)
	if err != nil {
		return nil, err
	}
	return rt.endWhenDrained(rdr, key, out, run), nil
}

// startShuffle plans t's query as this node and starts producing the buckets of its shuffle,
// under the execution's context: the producer stops when the execution ends.
func (rt *Runtime) startShuffle(ctx context.Context, run *stageRun, t cluster.ShuffleTicket, key shuffleKey) (*exec.ShuffleOutput, error) {
	st := t.Stage
	op, _, err := rt.stagePlan(ctx, run, st)
	if err != nil {
		return nil, err
	}
	if op == nil {
		return nil, errs.Invalidf("this query does not divide among data nodes: it has no shuffle %d", t.Shuffle)
	}
	shuffle := findShuffle(op, t.Shuffle)
	if shuffle == nil {
		return nil, errs.Invalidf("shuffle %d is not part of this query's plan on this node", t.Shuffle)
	}
	tc := rt.stageTaskContext(run)
	tc.Exchange = &stageExchange{rt: rt, st: st, self: t.Node}
	runCtx, cancel := context.WithCancel(stageSession(run.ctx, st))
	out := exec.StartShuffleBounded(runCtx, shuffle, tc, rt.bucketBytes)
	rt.shuffles.mu.Lock()
	if rt.shuffles.ends == nil {
		rt.shuffles.ends = map[*exec.ShuffleOutput]func(){}
	}
	rt.shuffles.ends[out] = func() {
		cancel()
		tc.Cache.Release()
	}
	rt.shuffles.mu.Unlock()
	if _, ok := rt.work.afterFunc(runCtx, func() { rt.endShuffle(key, out) }); !ok {
		// The runtime is closing: out is in no slot yet.
		rt.stopProducer(out)
		return nil, errClosed
	}
	return out, nil
}

// endWhenDrained returns rdr, which counts as a reader of run until its final Release and ends
// the producer out then if every bucket has been read.
func (rt *Runtime) endWhenDrained(rdr array.RecordReader, key shuffleKey, out *exec.ShuffleOutput, run *stageRun) array.RecordReader {
	return stream.OnRelease(rdr, func() {
		if out.Drained() {
			rt.endShuffle(key, out)
		}
		rt.stages.close(run)
	})
}

// endShuffle stops a producer, frees what it holds and forgets it.
func (rt *Runtime) endShuffle(key shuffleKey, out *exec.ShuffleOutput) {
	if !rt.stopProducer(out) {
		return
	}
	rt.shuffles.mu.Lock()
	slot := rt.shuffles.byKey[key]
	rt.shuffles.mu.Unlock()
	if slot == nil {
		return
	}
	slot.mu.Lock()
	for i, r := range slot.runs {
		if r == out {
			slot.runs = append(slot.runs[:i], slot.runs[i+1:]...)
			break
		}
	}
	empty := len(slot.runs) == 0
	slot.mu.Unlock()
	if empty {
		rt.shuffles.mu.Lock()
		if rt.shuffles.byKey[key] == slot {
			delete(rt.shuffles.byKey, key)
		}
		rt.shuffles.mu.Unlock()
	}
}

// stopProducer stops out and frees what it holds, once: it reports whether this call did.
func (rt *Runtime) stopProducer(out *exec.ShuffleOutput) bool {
	rt.shuffles.mu.Lock()
	end, ok := rt.shuffles.ends[out]
	delete(rt.shuffles.ends, out)
	rt.shuffles.mu.Unlock()
	if !ok {
		return false
	}
	out.Close()
	end()
	return true
}

// findShuffle returns the shuffle numbered id in op's tree.
func findShuffle(op exec.Operator, id int) *exec.Shuffle {
	if a, ok := op.(*exec.Analyzed); ok {
		op = a.Unwrap()
	}
	if s, ok := op.(*exec.Shuffle); ok && s.ID() == id {
		return s
	}
	for _, c := range op.Children() {
		if s := findShuffle(c, id); s != nil {
			return s
		}
	}
	return nil
}
