package engine

import (
	"context"
	"fmt"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/exec"
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
	// datasets are the datasets the plan reads (DatasetShapes).
	datasets []*memcat.Dataset
}

// Distribute plans a query over nodes data nodes, or returns nil when it runs in one process (no
// distributed scan, or a table only this process has).
func (e *Engine) Distribute(ctx context.Context, sqlText string, nodes int) (*DistributedPlan, error) {
	op, dist, err := e.PlanStage(ctx, sqlText, nodes)
	if err != nil || op == nil {
		return nil, err
	}
	if !datasetsPlaced(dist.Scans) {
		return nil, nil
	}
	out := &DistributedPlan{OnNodes: dist.Root != nil, RootScan: -1, Shuffles: dist.Shuffles, datasets: scannedDatasets(dist.Scans)}
	if dist.Root != nil {
		out.RootScan = dist.Root.Scan
	}
	for _, s := range dist.Scans {
		out.Scans = append(out.Scans, Division{Bytes: s.TaskBytes(), Locations: s.TaskLocations()})
	}
	return out, nil
}

// datasetsPlaced reports whether every partition of every dataset among scans is held by a
// data node. A dataset held by fewer nodes than take part (one smaller than the cluster) still
// divides: the nodes holding none of it learn it from the stage (DatasetShapes) and its tasks
// run where they are held.
func datasetsPlaced(scans []*exec.Scan) bool {
	for _, s := range scans {
		if _, ok := s.Table().(*memcat.Dataset); !ok {
			continue
		}
		for _, loc := range s.TaskLocations() {
			if loc == "" {
				return false
			}
		}
	}
	return true
}

// PlanStage plans a query over nodes data nodes in the Session of ctx, which must carry the
// pins of the execution, so that every process of it numbers scans, tasks and shuffles alike
// (planner.PlanDistributed). It returns a nil operator when the query runs in one process (not
// a query, no distributed scan, or a view: data nodes plan the SQL text, and the head's views
// are not theirs). A node runtime runs the stages of the plan; operators are immutable, so one
// plan serves every stage and shuffle producer of an execution in a process.
func (e *Engine) PlanStage(ctx context.Context, sqlText string, nodes int) (exec.Operator, planner.Distribution, error) {
	return e.PlanStageAnalyzed(ctx, sqlText, nodes, false)
}

// PlanStageAnalyzed is PlanStage with, when analyze, every operator measured for EXPLAIN
// ANALYZE (exec.Instrument; exec.FormatAnalyzedPlan prints the measurements). The plan's
// scans, shuffles and placements are the same either way.
func (e *Engine) PlanStageAnalyzed(ctx context.Context, sqlText string, nodes int, analyze bool) (exec.Operator, planner.Distribution, error) {
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
	opts := e.physicalOptions(analyze)
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

// explainDistributed adds the distributed plan of q to an EXPLAIN, when there are data nodes
// and q would run over them.
func (e *Engine) explainDistributed(ctx context.Context, q *planner.Query, add func(kind, text string)) error {
	if e.cfg.DataNodes == nil {
		return nil
	}
	nodes := e.cfg.DataNodes()
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

// plural writes n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
