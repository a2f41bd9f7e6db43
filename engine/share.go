package engine

import (
	"context"

	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
	"github.com/cachedb/cachedb/sql"
)

// Shares reports into how many parts a query's rows can be divided among data nodes without
// moving rows between them: its scan partitions, when the query is a scan with filters and
// projections only (planner.PlanQueryShares); 0 when it must run in one place.
func (e *Engine) Shares(ctx context.Context, sqlText string) (int, error) {
	op, _, ok, err := e.planShares(ctx, sqlText)
	if err != nil || !ok {
		return 0, err
	}
	return op.Partitions(), nil
}

// ExecuteShare runs share (0-based) of of shares of a query that Shares divides: the rows of
// the scan partitions exec.AssignShares gives that share, balanced by the bytes they read. Run with the Pins of the planning Prepare in its
// Session, every share reads the same snapshots, and the shares together return each row of
// the query exactly once.
func (e *Engine) ExecuteShare(ctx context.Context, sqlText string, share, of int) (*Result, error) {
	op, sizes, ok, err := e.planShares(ctx, sqlText)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errs.Invalidf("this query cannot be divided among data nodes")
	}
	part, err := exec.NewShare(op, share, of, sizes)
	if err != nil {
		return nil, err
	}
	rdr, err := e.run(ctx, exec.NewCoalesce(part), nil)
	if err != nil {
		return nil, err
	}
	return &Result{Schema: rdr.Schema(), Reader: rdr}, nil
}

func (e *Engine) planShares(ctx context.Context, sqlText string) (exec.Operator, []int64, bool, error) {
	tables, err := e.tablesFor(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	stmt, err := sql.Bind(ctx, sqlText, tables, nil)
	if err != nil {
		return nil, nil, false, err
	}
	q, ok := stmt.(*planner.Query)
	if !ok {
		return nil, nil, false, nil
	}
	return planner.PlanQueryShares(q, e.physicalOptions(false))
}
