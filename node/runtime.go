// Package node is the data-node runtime: what a process that holds and serves data is, beside
// the engine that plans its SQL. It owns the partition store (dataset partitions held in the
// engine's memory catalog: Materialize, ReadPartition, DropDataset), the stage and shuffle
// service (ExecuteStage, ServeShuffle, CancelStage, with the registry of the distributed
// executions the process takes part in) and the training-read gather (ReadEpoch).
//
// Every process of a cluster runs one: each data node, and the head, which runs the final stage
// of a distributed query whose endpoint is the head. A Runtime has one lifecycle: New starts it
// and Close ends it, and every goroutine it starts (stage idle and expiry timers, shuffle
// producers, cancel broadcasts) has ended when Close returns.
package node

import (
	"context"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/flightwire"
	"github.com/cachedb/cachedb/internal/mempool"
)

// Config is what a Runtime is made of. Engine is required; every other field has a default.
type Config struct {
	// Engine plans the SQL of stages and dataset partitions at the pins their tickets carry, and
	// its memory catalog holds the dataset partitions the runtime makes (so that the queries it
	// plans read them).
	Engine *engine.Engine
	// Shuffles fetches shuffle buckets from other nodes and sends them cancel broadcasts (nil:
	// the process reaches no other node; fetching from one is an error). The runtime owns it:
	// Close closes it.
	Shuffles *cluster.Shuffles
	// Alloc serves everything the runtime runs and holds (default: the engine's allocator).
	Alloc memory.Allocator
	// StageIdle is how long the runtime keeps its part of a distributed execution (plan, shuffle
	// producers, unread buckets) once no reader of it is left (default DefaultStageIdle). A
	// client reading endpoints one after another must open the next within this time.
	StageIdle time.Duration
	// ShuffleBucketBytes bounds what one bucket of a shuffle producer holds before the producer
	// waits for its reader (default exec.DefaultShuffleBucketBytes; see exec.ShuffleOutput for
	// when it goes past the bound instead).
	ShuffleBucketBytes int64
	// Clock times execution lifetimes (default: the system clock); tests give a fake one.
	Clock Clock
	// Tiers holds the dataset partitions the runtime makes, in memory or on disk (default: tiers
	// of its own over the engine's pool, with no disk tier). The
	// runtimes of one process share one, given here; the caller closes it after them.
	Tiers *Tiers
}

// Clock is the time source of execution lifetimes.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d; stop cancels that if it has not started.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
func (systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// Runtime is a process's data-node runtime. It implements cluster.DatasetStore and
// cluster.ShuffleSource, and is safe for concurrent use.
type Runtime struct {
	eng    *engine.Engine
	alloc  memory.Allocator
	client *cluster.Shuffles
	// bucketBytes is Config.ShuffleBucketBytes.
	bucketBytes int64

	// ctx ends at Close; every execution's context derives from it.
	ctx    context.Context
	cancel context.CancelFunc
	// work counts the runtime's own goroutines, so that Close waits for them.
	work background

	// stages holds the distributed executions this process takes part in: their plans and
	// contexts.
	stages stageRegistry
	// shuffles holds this node's shuffle producers.
	shuffles shuffleRuns
	// datasetMu serializes the creation of dataset objects.
	datasetMu sync.Mutex
	// epochBuffers allocates the columns training reads gather, which their streams send
	// without copying them (flightwire.Allocator).
	epochBuffers *flightwire.Allocator
	// epochOrders keeps the orders of the epochs being read, shared by their segments.
	epochOrders *cluster.EpochOrders
	// tiers holds the dataset partitions' rows; ownTiers when the runtime made them.
	tiers    *Tiers
	ownTiers bool

	closeOnce sync.Once
}

var (
	_ cluster.DatasetStore  = (*Runtime)(nil)
	_ cluster.ShuffleSource = (*Runtime)(nil)
)

// New starts a runtime; Close ends it.
func New(cfg Config) (*Runtime, error) {
	if cfg.Engine == nil {
		return nil, errs.Internalf("a node runtime needs an engine")
	}
	if cfg.Alloc == nil {
		cfg.Alloc = cfg.Engine.Alloc()
	}
	if cfg.StageIdle <= 0 {
		cfg.StageIdle = DefaultStageIdle
	}
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	tiers, own := cfg.Tiers, false
	if tiers == nil {
		var err error
		if tiers, err = NewTiers(TiersConfig{Pool: cfg.Engine.Pool()}); err != nil {
			return nil, err
		}
		own = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	rt := &Runtime{
		eng: cfg.Engine, alloc: cfg.Alloc, client: cfg.Shuffles, ctx: ctx, cancel: cancel, bucketBytes: cfg.ShuffleBucketBytes,
		epochBuffers: flightwire.NewAllocator(cfg.Engine.Pool().Reserve(mempool.Consumer{Name: epochBuffersConsumer})), tiers: tiers, ownTiers: own,
		epochOrders: cluster.NewEpochOrders(epochOrdersKept),
	}
	rt.stages = stageRegistry{base: ctx, work: &rt.work, clock: cfg.Clock, idle: cfg.StageIdle, pool: cfg.Engine.Pool()}
	return rt, nil
}

// Close ends the runtime: every execution it takes part in ends (readers still open fail), new
// ones are refused, and Close returns once every goroutine the runtime started has ended. It
// then closes Config.Shuffles. Close the servers that call the runtime first; closing again
// does nothing.
func (rt *Runtime) Close() {
	rt.closeOnce.Do(func() {
		rt.stages.shut()
		rt.cancel()
		rt.work.wait()
		if rt.ownTiers {
			rt.tiers.Close()
		} else {
			rt.tiers.releaseOwner(rt)
		}
		if rt.client != nil {
			rt.client.Close()
		}
	})
}

// errClosed refuses work once the runtime is closed.
var errClosed = errs.Unavailablef("this node is shutting down")

// taskContext returns the context of one execution the runtime runs; its cache must be
// released with the execution's readers.
func (rt *Runtime) taskContext() *exec.TaskContext {
	tc := rt.eng.TaskContext()
	tc.Alloc = rt.alloc
	return tc
}

// stageTaskContext is taskContext for a part of the execution run: it reserves from the
// execution's memory group.
func (rt *Runtime) stageTaskContext(run *stageRun) *exec.TaskContext {
	tc := rt.taskContext()
	tc.Memory = run.memory
	return tc
}

// StageCounts measures what a process holds for distributed executions.
type StageCounts struct {
	// Executions are the executions with live state here (a plan, producers or readers).
	Executions int
	// Producers are the shuffle producers running or holding unread buckets.
	Producers int
	// Canceled are the canceled executions remembered until their tickets expire (an id each).
	Canceled int
}

// Stages reports what this process holds for distributed executions.
func (rt *Runtime) Stages() StageCounts {
	rt.stages.mu.Lock()
	c := StageCounts{Executions: len(rt.stages.runs), Canceled: len(rt.stages.canceled)}
	rt.stages.mu.Unlock()
	rt.shuffles.mu.Lock()
	c.Producers = len(rt.shuffles.ends)
	rt.shuffles.mu.Unlock()
	return c
}
