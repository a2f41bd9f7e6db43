package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/array"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// DistributedPlan describes how a query runs over data nodes (planner.PlanDistributed).
type DistributedPlan struct {
	// Scans describe the tasks of each distributed scan, by number: what the head places on
	// the nodes (cluster.Stage.Owners).
	Scans []Division
	// OnNodes is true when the final stage runs on the data nodes, one endpoint per node;
	// otherwise it runs on the head, which gathers what it needs from the nodes.
	OnNodes bool
	// RootScan, when OnNodes, is the distributed scan whose tasks are the final stage's
	// partitions (a node gets an endpoint iff it reads one of them), or -1 when the final stage
	// is made of shuffle buckets (every node gets an endpoint).
	RootScan int
	// Shuffles counts the exchanges of rows between nodes.
	Shuffles int
}

// Distribute plans a query over nodes data nodes, or returns nil when it runs in one process (no
// distributed scan, or a table only this process has).
func (e *Engine) Distribute(ctx context.Context, sqlText string, nodes int) (*DistributedPlan, error) {
	op, dist, err := e.planDistributed(ctx, sqlText, nodes)
	if err != nil || op == nil {
		return nil, err
	}
	if !datasetsOnEveryNode(dist.Scans, nodes) {
		return nil, nil
	}
	out := &DistributedPlan{OnNodes: dist.Root != nil, RootScan: -1, Shuffles: dist.Shuffles}
	if dist.Root != nil {
		out.RootScan = dist.Root.Scan
	}
	for _, s := range dist.Scans {
		out.Scans = append(out.Scans, Division{Bytes: s.TaskBytes(), Locations: s.TaskLocations()})
	}
	return out, nil
}

// datasetsOnEveryNode reports whether every dataset among scans has a partition on each of the
// nodes. Every node plans a distributed query itself, and a data node knows a dataset only once
// it holds a partition of it: a dataset held by fewer nodes (one smaller than the cluster) is
// read by the head instead, which reaches every partition where it is held.
func datasetsOnEveryNode(scans []*exec.Scan, nodes int) bool {
	for _, s := range scans {
		if _, ok := s.Table().(*memcat.Dataset); !ok {
			continue
		}
		holders := map[string]bool{}
		for _, loc := range s.TaskLocations() {
			holders[loc] = true
		}
		if len(holders) < nodes || holders[""] {
			return false
		}
	}
	return true
}

func (e *Engine) planDistributed(ctx context.Context, sqlText string, nodes int) (exec.Operator, planner.Distribution, error) {
	if nodes < 1 {
		return nil, planner.Distribution{}, nil
	}
	tables, err := e.tablesFor(ctx)
	if err != nil {
		return nil, planner.Distribution{}, err
	}
	stmt, err := e.bind(ctx, sqlText, tables, nil)
	if err == nil {
		err = stopped(ctx)
	}
	if err != nil {
		return nil, planner.Distribution{}, err
	}
	q, ok := stmt.(*planner.Query)
	if !ok || tables.UsedViews() {
		// Data nodes plan the SQL text, and the head's views are not theirs.
		return nil, planner.Distribution{}, nil
	}
	opts := e.physicalOptions(false)
	opts.Nodes = nodes
	op, dist, err := planner.PlanDistributed(ctx, q, opts)
	if err == nil {
		err = stopped(ctx)
	}
	if err != nil {
		return nil, planner.Distribution{}, err
	}
	return op, dist, nil
}

// ExecuteStage runs this process's part of a distributed execution of st (planned in the
// Session of ctx, which must carry st's pins): on data node self, the partitions of the final
// stage it owns; on the head (self < 0), the whole final stage, gathering from the nodes.
//
// The final stage runs until ctx ends or st's execution ends (stageRegistry). Releasing the
// reader before its end, or an error, cancels the execution here and on every node of it.
func (e *Engine) ExecuteStage(ctx context.Context, st cluster.Stage, self int) (*Result, error) {
	run, err := e.stages.open(st)
	if err != nil {
		return nil, err
	}
	res, err := e.executeStage(ctx, run, st, self)
	if err != nil {
		e.abandonStage(st, self)
		e.stages.close(run)
		return nil, err
	}
	return res, nil
}

func (e *Engine) executeStage(ctx context.Context, run *stageRun, st cluster.Stage, self int) (*Result, error) {
	op, dist, err := e.stagePlan(ctx, run, st)
	if err != nil {
		return nil, err
	}
	if op == nil {
		return nil, errs.Invalidf("this query does not divide among data nodes")
	}
	ex := &stageExchange{e: e, st: st, self: self}
	switch {
	case self >= 0 && dist.Root != nil:
		owned, err := dist.Root.Owned(ex, op.Partitions())
		if err != nil {
			return nil, err
		}
		share, err := exec.NewShareOf(op, owned)
		if err != nil {
			return nil, err
		}
		op = exec.NewCoalesce(share)
	case self >= 0:
		return nil, errs.Invalidf("the final stage of this query runs on the head, not on a data node")
	case dist.Root != nil:
		return nil, errs.Invalidf("the final stage of this query runs on the data nodes, not on the head")
	}
	// The operators stop when the caller goes away and when the execution ends.
	execCtx, stopExec := context.WithCancelCause(ctx)
	unlink := context.AfterFunc(run.ctx, func() { stopExec(context.Cause(run.ctx)) })
	tc := e.taskContext(nil)
	tc.Exchange = ex
	rdr, err := op.Execute(execCtx, 0, tc)
	if err != nil {
		unlink()
		stopExec(nil)
		tc.Cache.Release()
		return nil, err
	}
	return &Result{Schema: op.Schema(), Reader: &stageReader{RecordReader: rdr, onRelease: func(complete bool) {
		unlink()
		stopExec(nil)
		tc.Cache.Release()
		switch {
		case !complete:
			e.abandonStage(st, self)
			e.stages.close(run)
		case self < 0:
			// Nothing reads from the head: its part ends with its last reader.
			e.stages.closeLast(run)
		default:
			e.stages.close(run)
		}
	}}}, nil
}

// stagePlan returns the plan of st's query, planned in st's session on first use and kept with
// run, so that the final stage and every shuffle producer this process runs of the execution
// share one planning (one read of the table metadata and manifests) instead of planning once
// each. Operators are immutable and executions keep their state in their own TaskContext, so
// sharing the tree is safe. The planning stops when the execution ends or ctx (the caller
// waiting for it) ends.
func (e *Engine) stagePlan(ctx context.Context, run *stageRun, st cluster.Stage) (exec.Operator, planner.Distribution, error) {
	run.planMu.Lock()
	defer run.planMu.Unlock()
	if run.planned {
		return run.op, run.dist, nil
	}
	// Planned for every caller alike, under the execution's context: one caller going away
	// must not fail the others, but a caller must not wait once it is gone.
	planCtx, stop := context.WithCancelCause(WithSession(run.ctx, Session{Catalog: st.Catalog, Schema: st.Schema, Pins: st.Pins}))
	defer stop(nil)
	unlink := context.AfterFunc(ctx, func() { stop(context.Cause(ctx)) })
	defer unlink()
	op, dist, err := e.planDistributed(planCtx, st.SQL, len(st.Nodes))
	if err == nil {
		err = stopped(planCtx)
	}
	if err != nil {
		return nil, planner.Distribution{}, err
	}
	run.op, run.dist, run.planned = op, dist, true
	return op, dist, nil
}

// UseDataNodes tells the head how many data nodes are alive, for EXPLAIN to show the
// distributed plan a query would run as.
func (e *Engine) UseDataNodes(count func() int) { e.dataNodes = count }

// explainDistributed adds the distributed plan of q to an EXPLAIN, when there are data nodes
// and q would run over them.
func (e *Engine) explainDistributed(ctx context.Context, q *planner.Query, add func(kind, text string)) error {
	if e.dataNodes == nil {
		return nil
	}
	nodes := e.dataNodes()
	if nodes < 1 {
		return nil
	}
	opts := e.physicalOptions(false)
	opts.Nodes = nodes
	op, dist, err := planner.PlanDistributed(ctx, q, opts)
	if err != nil || op == nil {
		return err
	}
	where := "the head, which gathers from the data nodes"
	if dist.Root != nil {
		where = "each data node (one endpoint per node)"
	}
	add("distributed_plan", fmt.Sprintf("%s, %s, %s; the final stage runs on %s",
		plural(nodes, "data node"), plural(len(dist.Scans), "distributed scan"), plural(dist.Shuffles, "shuffle"), where))
	add("distributed_plan", exec.FormatPlan(op))
	return nil
}

// UseShuffles makes the engine fetch shuffle buckets from other data nodes with s.
func (e *Engine) UseShuffles(s *cluster.Shuffles) { e.shuffles.client = s }

// stageExchange is the exec.Exchange of one execution of a stage in this process.
type stageExchange struct {
	e    *Engine
	st   cluster.Stage
	self int
}

func (x *stageExchange) Nodes() int { return len(x.st.Nodes) }
func (x *stageExchange) Self() int  { return x.self }

func (x *stageExchange) TaskOwners(scan int) ([]int, error) {
	if scan < 0 || scan >= len(x.st.Owners) {
		return nil, errs.Internalf("the stage places %d scans, the plan has scan %d", len(x.st.Owners), scan)
	}
	return x.st.Owners[scan], nil
}

// Fetch reads a bucket produced on node: from this engine when node is this process, else over
// Flight.
func (x *stageExchange) Fetch(ctx context.Context, node, shuffle, bucket int) (array.RecordReader, error) {
	t := cluster.ShuffleTicket{Stage: x.st, Shuffle: shuffle, Bucket: bucket, Node: node}
	if node == x.self {
		return x.e.ServeShuffle(ctx, t)
	}
	if x.e.shuffles.client == nil {
		return nil, errs.Internalf("this process has no way to reach data node %d for shuffle %d", node, shuffle)
	}
	return x.e.shuffles.client.Fetch(ctx, t)
}

// shuffleRuns holds the shuffle producers running on this data node, by execution and shuffle.
type shuffleRuns struct {
	client *cluster.Shuffles
	mu     sync.Mutex
	byKey  map[shuffleKey]*shuffleSlot
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
func (e *Engine) ServeShuffle(ctx context.Context, t cluster.ShuffleTicket) (array.RecordReader, error) {
	run, err := e.stages.open(t.Stage)
	if err != nil {
		return nil, err
	}
	rdr, err := e.serveShuffle(ctx, run, t)
	if err != nil {
		e.stages.close(run)
		return nil, err
	}
	return rdr, nil
}

func (e *Engine) serveShuffle(ctx context.Context, run *stageRun, t cluster.ShuffleTicket) (array.RecordReader, error) {
	key := shuffleKey{query: t.Stage.Query, shuffle: t.Shuffle}
	e.shuffles.mu.Lock()
	if e.shuffles.byKey == nil {
		e.shuffles.byKey = map[shuffleKey]*shuffleSlot{}
	}
	slot := e.shuffles.byKey[key]
	if slot == nil {
		slot = &shuffleSlot{}
		e.shuffles.byKey[key] = slot
	}
	e.shuffles.mu.Unlock()

	slot.mu.Lock()
	defer slot.mu.Unlock()
	for _, out := range slot.runs {
		rdr, ok, err := out.Claim(ctx, t.Bucket)
		if err != nil {
			return nil, err
		}
		if ok {
			return e.endWhenDrained(rdr, key, out, run), nil
		}
	}
	out, err := e.startShuffle(ctx, run, t, key)
	if err != nil {
		return nil, err
	}
	slot.runs = append(slot.runs, out)
	rdr, _, err := out.Claim(ctx, t.Bucket)
	if err != nil {
		return nil, err
	}
	return e.endWhenDrained(rdr, key, out, run), nil
}

// startShuffle plans t's query as this node and starts producing the buckets of its shuffle,
// under the execution's context: the producer stops when the execution ends.
func (e *Engine) startShuffle(ctx context.Context, run *stageRun, t cluster.ShuffleTicket, key shuffleKey) (*exec.ShuffleOutput, error) {
	st := t.Stage
	op, _, err := e.stagePlan(ctx, run, st)
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
	tc := e.taskContext(nil)
	tc.Exchange = &stageExchange{e: e, st: st, self: t.Node}
	runCtx, cancel := context.WithCancel(WithSession(run.ctx, Session{Catalog: st.Catalog, Schema: st.Schema, Pins: st.Pins}))
	out := exec.StartShuffle(runCtx, shuffle, tc)
	e.shuffles.mu.Lock()
	if e.shuffles.ends == nil {
		e.shuffles.ends = map[*exec.ShuffleOutput]func(){}
	}
	e.shuffles.ends[out] = func() {
		cancel()
		tc.Cache.Release()
	}
	e.shuffles.mu.Unlock()
	context.AfterFunc(runCtx, func() { e.endShuffle(key, out) })
	return out, nil
}

// endWhenDrained returns rdr, which counts as a reader of run until released and ends the
// producer out once every bucket has been read.
func (e *Engine) endWhenDrained(rdr array.RecordReader, key shuffleKey, out *exec.ShuffleOutput, run *stageRun) array.RecordReader {
	return &releaseHook{RecordReader: rdr, onRelease: func() {
		if out.Drained() {
			e.endShuffle(key, out)
		}
		e.stages.close(run)
	}}
}

// endShuffle stops a producer, frees what it holds and forgets it.
func (e *Engine) endShuffle(key shuffleKey, out *exec.ShuffleOutput) {
	e.shuffles.mu.Lock()
	end, ok := e.shuffles.ends[out]
	delete(e.shuffles.ends, out)
	slot := e.shuffles.byKey[key]
	e.shuffles.mu.Unlock()
	if !ok {
		return
	}
	out.Close()
	end()
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
		e.shuffles.mu.Lock()
		if e.shuffles.byKey[key] == slot {
			delete(e.shuffles.byKey, key)
		}
		e.shuffles.mu.Unlock()
	}
}

// findShuffle returns the shuffle numbered id in op's tree.
func findShuffle(op exec.Operator, id int) *exec.Shuffle {
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

// releaseHook calls onRelease after its last Release.
type releaseHook struct {
	array.RecordReader
	once      sync.Once
	refs      int64
	mu        sync.Mutex
	onRelease func()
}

func (r *releaseHook) Retain() {
	r.mu.Lock()
	r.refs++
	r.mu.Unlock()
	r.RecordReader.Retain()
}

func (r *releaseHook) Release() {
	r.mu.Lock()
	last := r.refs == 0
	r.refs--
	r.mu.Unlock()
	r.RecordReader.Release()
	if last {
		r.once.Do(r.onRelease)
	}
}

// plural writes n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
