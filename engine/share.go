package engine

import (
	"context"

	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// Division describes the scan tasks of one distributed scan: one entry per task.
type Division struct {
	// Bytes estimates what each task reads from storage (at least 1).
	Bytes []int64
	// Locations gives the data node address holding each task's rows (a dataset partition), or
	// "" for a task any node can read (an Iceberg file scan task).
	Locations []string
}

// Tasks is the number of scan tasks.
func (d *Division) Tasks() int { return len(d.Bytes) }

// PlanTasks plans the given scan tasks (indexes into the scan tasks of the query's single
// scan, planner.PlanQueryShares) of a query that divides among data nodes without moving rows:
// an operator with one partition per task, in the order given. Run in the Session of ctx, with
// the pins of the planning Prepare, every process numbers the tasks alike and reads the same
// snapshots, so tasks that together name each index once return each row of the query exactly
// once. A query that does not divide (aggregates, joins, sorts, limits, memory tables) is an
// errs.InvalidInput error.
func (e *Engine) PlanTasks(ctx context.Context, sqlText string, tasks []int) (exec.Operator, error) {
	op, _, ok, err := e.planShares(ctx, sqlText)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errs.Invalidf("this query cannot be divided among data nodes")
	}
	return exec.NewShareOf(op, tasks)
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
