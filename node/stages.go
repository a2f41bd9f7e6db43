package node

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/planner"
)

// DefaultStageIdle is how long a process keeps a distributed execution (its plan, its shuffle
// producers and their unread buckets) after the last reader of it went away (Config.StageIdle).
const DefaultStageIdle = time.Minute

// cancelBroadcastTimeout bounds the cancel action sent to each peer when an execution is
// abandoned; a peer that does not answer in time forgets the execution when it goes idle.
const cancelBroadcastTimeout = 10 * time.Second

// stageRegistry is this process's record of the distributed executions (cluster.Stage, by
// Query) it takes part in. Each execution has one context, and everything the process runs for
// it runs under that context: its planning, its shuffle producers and the final stage a client
// reads here. The context ends, and with it all of that, when
//   - the execution is canceled: a reader of its final stage (here or on a peer, which sends
//     cluster.ActionCancelStage) went away before the end, or the final stage failed;
//   - no reader of it has been open here for the idle timeout (a consumer that died, buckets
//     that no client will fetch);
//   - its tickets expire.
//
// A canceled execution is remembered until its tickets expire, so that a fetch or ticket of it
// arriving late is refused instead of starting its work again.
type stageRegistry struct {
	// base is the runtime's context, which every execution's derives from; work counts the
	// timers and callbacks the registry sets.
	base  context.Context
	work  *background
	clock Clock
	idle  time.Duration
	// pool is the process's memory budget each execution's group reserves from.
	pool *mempool.Pool

	mu sync.Mutex
	// closed refuses new executions once the runtime is closing.
	closed bool
	runs   map[string]*stageRun
	// canceled holds the canceled executions until their tickets expire; swept at most once a
	// minute when one is added.
	canceled  map[string]time.Time
	nextSweep time.Time
	// profiles keeps the measurements of analyzed executions that ended here (EXPLAIN
	// ANALYZE), for the head to collect, until their tickets expire; at most maxProfiles.
	profiles map[string]keptProfile
}

// keptProfile is the analyzed plan of an ended execution, kept until expires.
type keptProfile struct {
	text    string
	expires time.Time
}

// maxProfiles bounds the measurements kept of ended executions.
const maxProfiles = 64

// stageRun is one execution in this process.
type stageRun struct {
	query  string
	ctx    context.Context
	cancel context.CancelCauseFunc
	// expires is when the execution's tickets expire.
	expires time.Time
	// memory is the execution's memory group in this process, shared by its final stage and
	// its shuffle producers here: bounded by the session's limit (cluster.Stage.MemoryLimit).
	memory *mempool.Group

	// Guarded by the registry's mu.
	readers    int // open readers: shuffle buckets served and final stages run here
	idleGen    int // counts idle periods, so a stale idle timer does nothing
	stopIdle   func() bool
	stopExpiry func() bool

	// planMu serializes the planning of the execution; a failed planning is not kept, so a
	// retry plans again.
	planMu  sync.Mutex
	planned bool
	// analyzed: op measures each operator (cluster.Stage.Analyze).
	analyzed bool
	op       exec.Operator
	dist     planner.Distribution
}

// profile returns the measurements of run's operators in this process so far, or "" when run
// was not planned here with Stage.Analyze.
func (run *stageRun) profile() string {
	run.planMu.Lock()
	defer run.planMu.Unlock()
	if !run.planned || !run.analyzed {
		return ""
	}
	return exec.FormatAnalyzedPart(run.op)
}

var (
	errStageIdle    = errs.Unavailablef("the distributed execution was stopped on this node: no reader of it was left")
	errStageExpired = errs.Unavailablef("the distributed execution's tickets expired")
)

// stageCanceled is the error of work stopped because its execution was canceled.
func stageCanceled(query string) error {
	return &errs.Error{Category: errs.Canceled, Msg: fmt.Sprintf("distributed execution %s was canceled (a reader of it went away or it failed); run the query again", query)}
}

// open returns st's execution, starting its record when it is new, and counts one more reader
// of it until close. A canceled execution is an errs.Canceled error; once the runtime is
// closing, every execution is refused (errClosed).
func (r *stageRegistry) open(st cluster.Stage) (*stageRun, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	if _, ok := r.canceled[st.Query]; ok {
		return nil, stageCanceled(st.Query)
	}
	run := r.runs[st.Query]
	if run == nil || run.ctx.Err() != nil {
		if r.runs == nil {
			r.runs = map[string]*stageRun{}
		}
		ctx, cancel := context.WithCancelCause(r.base)
		run = &stageRun{query: st.Query, ctx: ctx, cancel: cancel, expires: st.Expires, memory: r.pool.Group("this query", st.MemoryLimit)}
		run.stopExpiry = r.work.afterTime(r.clock, max(st.Expires.Sub(r.clock.Now()), 0), func() { cancel(errStageExpired) })
		r.runs[st.Query] = run
		// Counted while r is open (r.mu is held): the runtime's Close waits for it.
		r.work.afterFunc(ctx, func() { r.forget(run) })
	}
	run.readers++
	if run.stopIdle != nil {
		run.stopIdle()
		run.stopIdle = nil
	}
	return run, nil
}

// close ends one reader of run; the last one starts the idle timeout.
func (r *stageRegistry) close(run *stageRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	run.readers--
	if run.readers > 0 || run.ctx.Err() != nil || r.closed {
		return
	}
	run.idleGen++
	gen := run.idleGen
	run.stopIdle = r.work.afterTime(r.clock, r.idle, func() {
		r.mu.Lock()
		idle := run.readers == 0 && run.idleGen == gen
		r.mu.Unlock()
		if idle {
			run.cancel(errStageIdle)
		}
	})
}

// errStageDone ends an execution whose last reader here has read it to the end and that no
// other process reads from this one (the head's part of an execution).
var errStageDone = errs.Unavailablef("the distributed execution ended")

// closeLast ends one reader of run like close, and ends run at once when no reader is left,
// instead of after the idle timeout: for a process nothing else reads from (the head).
func (r *stageRegistry) closeLast(run *stageRun) {
	r.mu.Lock()
	run.readers--
	last := run.readers == 0
	if !last {
		r.mu.Unlock()
		return
	}
	// A reader opening from here on finds the run gone (or ending) and starts a new one.
	if r.runs[run.query] == run {
		delete(r.runs, run.query)
	}
	r.mu.Unlock()
	r.keepProfile(run)
	run.cancel(errStageDone)
}

// forget drops a run whose context ended.
func (r *stageRegistry) forget(run *stageRun) {
	r.keepProfile(run)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs[run.query] == run {
		delete(r.runs, run.query)
	}
	if run.stopIdle != nil {
		run.stopIdle()
		run.stopIdle = nil
	}
	run.stopExpiry()
}

// keepProfile keeps the measurements of an analyzed run that ends, until its tickets expire,
// dropping expired ones and, past maxProfiles, the one expiring first.
func (r *stageRegistry) keepProfile(run *stageRun) {
	text := run.profile()
	if text == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	if !run.expires.After(now) {
		return
	}
	if r.profiles == nil {
		r.profiles = map[string]keptProfile{}
	}
	if _, kept := r.profiles[run.query]; kept {
		// Kept already (a run ending by closeLast is kept again as it is forgotten):
		// replacing it must not make room by dropping another.
		r.profiles[run.query] = keptProfile{text: text, expires: run.expires}
		return
	}
	for q, p := range r.profiles {
		if !p.expires.After(now) {
			delete(r.profiles, q)
		}
	}
	for len(r.profiles) >= maxProfiles {
		first := ""
		for q, p := range r.profiles {
			if first == "" || p.expires.Before(r.profiles[first].expires) {
				first = q
			}
		}
		delete(r.profiles, first)
	}
	r.profiles[run.query] = keptProfile{text: text, expires: run.expires}
}

// profile returns the measurements of query's execution in this process: of the running
// execution, or of one that ended and is kept.
func (r *stageRegistry) profile(query string) (string, bool) {
	r.mu.Lock()
	run := r.runs[query]
	kept, ok := r.profiles[query]
	r.mu.Unlock()
	if run != nil {
		if text := run.profile(); text != "" {
			return text, true
		}
	}
	if ok && kept.expires.After(r.clock.Now()) {
		return kept.text, true
	}
	return "", false
}

// StageProfile implements cluster.StageProfiler: the analyzed plan of this process's part of
// the execution query (cluster.Stage.Analyze), with each operator's rows, bytes and time here.
func (rt *Runtime) StageProfile(query string) (string, error) {
	text, ok := rt.stages.profile(query)
	if !ok {
		return "", errs.NotFoundf("this node has no measurements of distributed execution %s: it did not run here with EXPLAIN ANALYZE, or its tickets expired", query)
	}
	return text, nil
}

// shut refuses new executions; the runtime's context, ending next, ends the running ones.
func (r *stageRegistry) shut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
}

// cancel stops query's execution here, if it runs, and refuses it until expires.
func (r *stageRegistry) cancel(query string, expires time.Time) {
	r.mu.Lock()
	now := r.clock.Now()
	if expires.After(now) {
		if r.canceled == nil {
			r.canceled = map[string]time.Time{}
		}
		r.canceled[query] = expires
	}
	if now.After(r.nextSweep) {
		for q, until := range r.canceled {
			if !until.After(now) {
				delete(r.canceled, q)
			}
		}
		r.nextSweep = now.Add(time.Minute)
	}
	run := r.runs[query]
	r.mu.Unlock()
	if run != nil {
		run.cancel(stageCanceled(query))
	}
}

// CancelStage implements cluster.StageCanceler: it stops this process's part of the execution
// query (see stageRegistry) and refuses it until expires.
func (rt *Runtime) CancelStage(query string, expires time.Time) {
	rt.stages.cancel(query, expires)
}

// abandonStage cancels st's execution here and on every other node of it: a reader of its
// final stage in this process (self, -1 for the head) went away before the end, or it failed,
// so nothing the other nodes produce for it can be used.
//
// The broadcasts run in the background, under the runtime's context: Close stops them.
func (rt *Runtime) abandonStage(st cluster.Stage, self int) {
	rt.stages.cancel(st.Query, st.Expires)
	client := rt.client
	if client == nil {
		return
	}
	for i, addr := range st.Nodes {
		if i == self {
			continue
		}
		rt.work.spawn("canceling a distributed execution", func() error {
			ctx, cancel := context.WithTimeout(rt.ctx, cancelBroadcastTimeout)
			defer cancel()
			return client.CancelStage(ctx, addr, st)
		}, func(err error) {
			if err != nil {
				slog.Debug("canceling a distributed execution on a data node", "query", st.Query, "node", addr, "err", err)
			}
		})
	}
}

// Peers is the client this runtime reaches the other data nodes with (nil: none).
func (rt *Runtime) Peers() *cluster.Shuffles { return rt.client }
