package engine

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/sync/errgroup"

	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/safe"
	"github.com/cachedb/cachedb/planner"
)

// Division describes how a query's rows divide among data nodes without moving rows between
// them: one entry per scan task of the query's single scan (planner.PlanQueryShares). Any set of
// tasks can be run on its own with ExecuteTasks; tasks that together name each index once return
// each row of the query exactly once.
type Division struct {
	// Bytes estimates what each task reads from storage (at least 1).
	Bytes []int64
	// Locations gives the data node address holding each task's rows (a dataset partition), or
	// "" for a task any node can read (an Iceberg file scan task).
	Locations []string
}

// Tasks is the number of scan tasks.
func (d *Division) Tasks() int { return len(d.Bytes) }

// Divide reports how a query divides among data nodes, or nil when it must run in one place
// (aggregates, joins, sorts, limits, memory tables).
func (e *Engine) Divide(ctx context.Context, sqlText string) (*Division, error) {
	_, scan, ok, err := e.planShares(ctx, sqlText)
	if err != nil || !ok {
		return nil, err
	}
	return &Division{Bytes: scan.TaskBytes(), Locations: scan.TaskLocations()}, nil
}

// ExecuteTasks runs the given scan tasks (indexes into the query's Division) of a query that
// Divide divides. Run with the Pins of the planning Prepare in its Session, every process numbers
// the tasks alike and reads the same snapshots.
func (e *Engine) ExecuteTasks(ctx context.Context, sqlText string, tasks []int) (*Result, error) {
	op, _, ok, err := e.planShares(ctx, sqlText)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errs.Invalidf("this query cannot be divided among data nodes")
	}
	part, err := exec.NewShareOf(op, tasks)
	if err != nil {
		return nil, err
	}
	rdr, err := e.run(ctx, exec.NewCoalesce(part), nil)
	if err != nil {
		return nil, err
	}
	return &Result{Schema: rdr.Schema(), Reader: rdr}, nil
}

func (e *Engine) planShares(ctx context.Context, sqlText string) (exec.Operator, *exec.Scan, bool, error) {
	tables, err := e.tablesFor(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	stmt, err := e.bind(ctx, sqlText, tables, nil)
	if err != nil {
		return nil, nil, false, err
	}
	q, ok := stmt.(*planner.Query)
	if !ok {
		return nil, nil, false, nil
	}
	return planner.PlanQueryShares(ctx, q, e.physicalOptions(false))
}

// collectTasksInOrder runs the given scan tasks like ExecuteTasks and returns all their rows:
// the tasks' rows in ascending task order, each task's in the order it reads them. Tasks run
// concurrently (up to the engine's partition count), but the result does not depend on their
// timing, so making a dataset partition again yields its rows in the same order.
func (e *Engine) collectTasksInOrder(ctx context.Context, sqlText string, tasks []int) (*arrow.Schema, []arrow.RecordBatch, error) {
	op, _, ok, err := e.planShares(ctx, sqlText)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, errs.Invalidf("this query cannot be divided among data nodes")
	}
	part, err := exec.NewShareOf(op, tasks)
	if err != nil {
		return nil, nil, err
	}
	tc := e.taskContext(nil)
	defer tc.Cache.Release()
	results := make([][]arrow.RecordBatch, part.Partitions())
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(e.cfg.Partitions)
	for i := range results {
		safe.Go(g, "dataset partition", func() error {
			rdr, err := part.Execute(gctx, i, tc)
			if err != nil {
				return err
			}
			results[i], err = drain(rdr)
			return err
		})
	}
	err = g.Wait()
	var out []arrow.RecordBatch
	for _, r := range results {
		out = append(out, r...)
	}
	if err != nil {
		releaseAll(out)
		return nil, nil, err
	}
	return part.Schema(), out, nil
}
