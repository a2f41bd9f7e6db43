package exec

import (
	"context"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/mempool"
)

// joinBuild is the materialized right side of a hash join and its hash table, reserved by res;
// or, when the right side did not fit in the query's memory, its rows partitioned into spill
// files (grace).
type joinBuild struct {
	batch arrow.RecordBatch
	table *joinTable
	res   *mempool.Reservation
	grace *graceBuild
}

// release frees the build: its rows, its reservation and its spill files.
func (b joinBuild) release() {
	if b.batch != nil {
		b.batch.Release()
	}
	if b.res != nil {
		b.res.Free()
	}
	if b.grace != nil {
		b.grace.files.removeAll()
		if b.grace.turnRes != nil {
			b.grace.turnRes.Free()
		}
	}
}

// sharedBuilds lets the partitions of one execution of a hash join share one build (of the
// right side; of the left side for LeftBuildHashJoin). Executions are told apart by *TaskContext, as Repartition runs are: the partitions
// executed with the same TaskContext share a build until all of them have been claimed, after
// which the next Execute builds afresh. The build is released when every partition has claimed
// it and released its reader; a consumer that never executes some partition keeps it alive,
// unless the builds end with their execution (endWithExecution).
type sharedBuilds[B releasable] struct {
	mu     sync.Mutex
	active map[*TaskContext]*sharedBuild[B]
	// endWithExecution also releases a build when its execution's cache (TaskContext.Cache) is
	// released, if no reader holds it then: a build a node shares among the partitions it runs
	// (ReplicatedHashJoin) is freed even when some of them are never executed. It registers one
	// cache entry per build, so it is for joins executed once per execution, not per outer row.
	endWithExecution bool
}

// releasable is a build that sharedBuilds frees once its last user lets go of it.
type releasable interface{ release() }

type sharedBuild[B releasable] struct {
	once      sync.Once
	build     B
	err       error
	claimed   int  // guarded by sharedBuilds.mu
	refs      int  // guarded by sharedBuilds.mu
	abandoned bool // its execution ended; guarded by sharedBuilds.mu
	freed     bool // guarded by sharedBuilds.mu
}

// acquire returns the build for tc, building it with build on first use. partitions is how many
// Execute calls share one build. The caller calls the returned release exactly once.
func (s *sharedBuilds[B]) acquire(ctx context.Context, tc *TaskContext, partitions int, build func(context.Context) (B, error)) (B, func(), error) {
	s.mu.Lock()
	if s.active == nil {
		s.active = map[*TaskContext]*sharedBuild[B]{}
	}
	sb := s.active[tc]
	fresh := sb == nil
	if fresh {
		sb = &sharedBuild[B]{}
		s.active[tc] = sb
	}
	sb.claimed++
	sb.refs++
	if sb.claimed >= partitions {
		delete(s.active, tc)
	}
	s.mu.Unlock()
	if fresh && s.endWithExecution && tc.Cache != nil {
		_, _ = tc.Cache.Do(sb, func() (any, error) {
			return onRelease(func() { s.abandon(tc, sb) }), nil
		})
	}

	release := func() {
		s.mu.Lock()
		sb.refs--
		// Until every partition has claimed the build, a later partition may still need it.
		last := sb.refs == 0 && (sb.claimed >= partitions || sb.abandoned) && !sb.freed
		sb.freed = sb.freed || last
		s.mu.Unlock()
		if last {
			sb.free()
		}
	}
	sb.once.Do(func() { sb.build, sb.err = build(ctx) })
	if sb.err != nil {
		release()
		var none B
		return none, nil, sb.err
	}
	return sb.build, release, nil
}

// abandon ends sb, tc's build, with its execution: it is freed now if no reader holds it, else
// when its last reader lets go, and a later Execute with tc builds afresh.
func (s *sharedBuilds[B]) abandon(tc *TaskContext, sb *sharedBuild[B]) {
	s.mu.Lock()
	if s.active[tc] == sb {
		delete(s.active, tc)
	}
	sb.abandoned = true
	last := sb.refs == 0 && !sb.freed
	sb.freed = sb.freed || last
	s.mu.Unlock()
	if last {
		sb.free()
	}
}

// free releases the build and drops it, so that its Go memory (the hash table) goes too while
// the execution's cache still refers to sb. Called once, with no reader left.
func (sb *sharedBuild[B]) free() {
	sb.build.release()
	var none B
	sb.build = none
}

// onRelease is a QueryCache value that runs its function when the cache is released.
type onRelease func()

func (f onRelease) Release() { f() }
