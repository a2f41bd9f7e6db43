package planner

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/exec"
)

// PlanQuery optimizes a bound query (computing once each CTE it shares, see shareCTEs, and
// narrowing grouped aggregates joined with selective scans, see ReduceGroupedJoins) and plans
// it physically. The returned operator has a
// single partition and the client-facing schema: output names as written, and booleans as the
// 0/1 integers a MySQL client sees. It also returns the optimized logical plan, for EXPLAIN.
func PlanQuery(ctx context.Context, q *Query, opts PhysicalOptions) (exec.Operator, Plan, error) {
	shared, err := shareCTEs(ctx, q.Plan)
	if err != nil {
		return nil, nil, err
	}
	logical, err := OptimizeContext(ctx, shared)
	if err != nil {
		return nil, nil, err
	}
	logical = ReduceGroupedJoins(ctx, logical)
	op, err := Physical(logical, opts)
	if err != nil {
		return nil, nil, err
	}
	pp := &physicalPlanner{opts: opts}
	op = pp.single(op)
	op, err = clientColumns(op, logical.Schema())
	if err != nil {
		return nil, nil, err
	}
	return op, logical, nil
}

// clientColumns casts boolean columns to int64.
func clientColumns(op exec.Operator, s Schema) (exec.Operator, error) {
	out := make(Schema, len(s))
	copy(out, s)
	changed := false
	for i, c := range out {
		if c.Type.ID() == arrow.BOOL {
			out[i].Type = arrow.PrimitiveTypes.Int64
			changed = true
		}
	}
	if !changed {
		return op, nil
	}
	return castColumns(op, s, out)
}

// OutputSchema is the client-facing Arrow schema of a query's plan (see PlanQuery).
func OutputSchema(p Plan) *arrow.Schema {
	s := p.Schema()
	fields := make([]arrow.Field, len(s))
	for i, c := range s {
		t := c.Type
		if t.ID() == arrow.BOOL {
			t = arrow.PrimitiveTypes.Int64
		}
		fields[i] = arrow.Field{Name: c.Name, Type: t, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// PlanQueryShares plans q for division among data nodes: when its physical plan is a scan of a
// versioned source table with only filters and projections above it (no aggregation, join,
// sort, limit or exchange), so that each scan partition's rows are final rows, it returns that
// plan with its partitions (the scan tasks) not merged, the scan (whose TaskBytes and
// TaskLocations describe the partitions), and ok. Otherwise ok is false and the query must run
// in one place.
func PlanQueryShares(ctx context.Context, q *Query, opts PhysicalOptions) (op exec.Operator, scan *exec.Scan, ok bool, err error) {
	logical, err := OptimizeContext(ctx, q.Plan)
	if err != nil {
		return nil, nil, false, err
	}
	op, err = Physical(logical, opts)
	if err != nil {
		return nil, nil, false, err
	}
	for cur := op; ; {
		switch cur.(type) {
		case *exec.Project, *exec.Filter:
			cur = cur.Children()[0]
			continue
		case *exec.Scan:
			// Data nodes run the head's source catalogs, not its memory or system tables; a
			// versioned (Iceberg) table, pinned to its snapshot, reads the same everywhere.
			if _, versioned := cur.(*exec.Scan).Table().(catalog.VersionedTable); !versioned {
				return nil, nil, false, nil
			}
			op, err = clientColumns(op, logical.Schema())
			return op, cur.(*exec.Scan), err == nil, err
		}
		return nil, nil, false, nil
	}
}
