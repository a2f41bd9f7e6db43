package node

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/stream"
	"github.com/cachedb/cachedb/planner"
)

// ExecuteStage runs this process's part of a distributed execution of st (planned in st's
// session at st's pins): on data node self, the partitions of the final stage it owns; on the
// head (self < 0), the whole final stage, gathering from the nodes.
//
// The final stage runs until ctx ends or st's execution ends (stageRegistry). Releasing the
// reader before its end, or an error, cancels the execution here and on every node of it.
func (rt *Runtime) ExecuteStage(ctx context.Context, st cluster.Stage, self int) (*engine.Result, error) {
	run, err := rt.stages.open(st)
	if err != nil {
		return nil, err
	}
	res, err := rt.executeStage(ctx, run, st, self)
	if err != nil {
		rt.abandonStage(st, self)
		rt.stages.close(run)
		return nil, err
	}
	return res, nil
}

func (rt *Runtime) executeStage(ctx context.Context, run *stageRun, st cluster.Stage, self int) (*engine.Result, error) {
	op, dist, err := rt.stagePlan(ctx, run, st)
	if err != nil {
		return nil, err
	}
	if op == nil {
		return nil, errs.Invalidf("this query does not divide among data nodes")
	}
	ex := &stageExchange{rt: rt, st: st, self: self}
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
	unlink, ok := rt.work.afterFunc(run.ctx, func() { stopExec(context.Cause(run.ctx)) })
	if !ok {
		stopExec(errClosed)
		return nil, errClosed
	}
	tc := rt.stageTaskContext(run)
	tc.Exchange = ex
	rdr, err := op.Execute(execCtx, 0, tc)
	if err != nil {
		unlink()
		stopExec(nil)
		tc.Cache.Release()
		return nil, err
	}
	// The final Release ends the operators, and abandons the execution unless the reader was
	// read to its end without an error.
	return &engine.Result{Schema: op.Schema(), Reader: stream.OnReleaseDrained(rdr, func(complete bool) {
		unlink()
		stopExec(nil)
		tc.Cache.Release()
		switch {
		case !complete:
			rt.abandonStage(st, self)
			rt.stages.close(run)
		case self < 0:
			// Nothing reads from the head: its part ends with its last reader.
			rt.stages.closeLast(run)
		default:
			rt.stages.close(run)
		}
	})}, nil
}

// stagePlan returns the plan of st's query, planned in st's session on first use and kept with
// run, so that the final stage and every shuffle producer this process runs of the execution
// share one planning (one read of the table metadata and manifests) instead of planning once
// each. Operators are immutable and executions keep their state in their own TaskContext, so
// sharing the tree is safe. The planning stops when the execution ends or ctx (the caller
// waiting for it) ends.
func (rt *Runtime) stagePlan(ctx context.Context, run *stageRun, st cluster.Stage) (exec.Operator, planner.Distribution, error) {
	run.planMu.Lock()
	defer run.planMu.Unlock()
	if run.planned {
		return run.op, run.dist, nil
	}
	// Planned for every caller alike, under the execution's context: one caller going away
	// must not fail the others, but a caller must not wait once it is gone.
	planCtx, stop := context.WithCancelCause(stageSession(run.ctx, st))
	defer stop(nil)
	unlink := context.AfterFunc(ctx, func() { stop(context.Cause(ctx)) })
	defer unlink()
	// The datasets are planned with the head's row counts: this node holds only some of their
	// partitions, and the cost-based choices (so the numbering of the scans) must be the head's.
	if err := rt.knowDatasets(st); err != nil {
		return nil, planner.Distribution{}, err
	}
	rt.eng.PinDatasetRows(st.Pins, st.DatasetRows)
	op, dist, err := rt.eng.PlanStageAnalyzed(planCtx, st.SQL, len(st.Nodes), st.Analyze)
	if err != nil {
		return nil, planner.Distribution{}, err
	}
	run.op, run.dist, run.planned, run.analyzed = op, dist, true, st.Analyze
	return op, dist, nil
}

// stageSession is ctx carrying the session and pins st's SQL is planned in.
func stageSession(ctx context.Context, st cluster.Stage) context.Context {
	return engine.WithSession(ctx, engine.Session{Catalog: st.Catalog, Schema: st.Schema, Pins: st.Pins})
}

// stageExchange is the exec.Exchange of one execution of a stage in this process.
type stageExchange struct {
	rt   *Runtime
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

// Fetch reads a bucket produced on node: from this runtime when node is this process, else over
// Flight.
func (x *stageExchange) Fetch(ctx context.Context, node, shuffle, bucket int) (array.RecordReader, error) {
	t := cluster.ShuffleTicket{Stage: x.st, Shuffle: shuffle, Bucket: bucket, Node: node}
	if node == x.self {
		return x.rt.ServeShuffle(ctx, t)
	}
	if x.rt.client == nil {
		return nil, errs.Internalf("this process has no way to reach data node %d for shuffle %d", node, shuffle)
	}
	return x.rt.client.Fetch(ctx, t)
}
