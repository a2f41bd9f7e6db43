package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// Subquery expressions execute a physical plan (all of its partitions) from inside Eval.
//
// An uncorrelated subquery runs once per Eval call and its result serves every row of the batch.
// A correlated one runs once per input row, with that row as tc.Outer (tc.WithOuter), so outer
// column references inside the plan read it. Each run gets a private TaskContext (see
// executeMerged), so re-running a plan that contains a Repartition is safe.

// ScalarSubquery is (SELECT …) used as a value.
type ScalarSubquery struct {
	plan       Operator
	correlated bool
}

// NewScalarSubquery returns an expression whose value is the single value plan yields: NULL
// when plan yields no row, an InvalidInput error when it yields more than one. plan must have
// exactly one column.
func NewScalarSubquery(plan Operator, correlated bool) Expr {
	return &ScalarSubquery{plan: plan, correlated: correlated}
}

func (s *ScalarSubquery) DataType() arrow.DataType { return subqueryColumnType(s.plan) }
func (s *ScalarSubquery) String() string           { return "(" + subqueryLabel(s.correlated) + ")" }

// Plan is the subquery's plan.
func (s *ScalarSubquery) Plan() Operator { return s.plan }

func (s *ScalarSubquery) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	if err := checkOneColumn(s.plan); err != nil {
		return nil, err
	}
	n := int(batch.NumRows())
	if n == 0 {
		return array.MakeArrayOfNull(tc.Alloc, s.DataType(), 0), nil
	}
	if !s.correlated {
		cached, err := tc.Cache.Do(s, func() (any, error) { return s.value(ctx, tc) })
		if err != nil {
			return nil, err
		}
		v := cached.(arrow.Array)
		if tc.Cache == nil {
			defer v.Release()
		}
		cols, err := takeColumns(ctx, tc, []arrow.Array{v}, make([]int32, n))
		if err != nil {
			return nil, err
		}
		return cols[0], nil
	}
	cells := make([]arrow.Array, 0, n)
	defer func() { releaseAll(cells) }()
	for row := range n {
		v, err := s.value(ctx, tc.WithOuter(batch, row))
		if err != nil {
			return nil, err
		}
		cells = append(cells, v)
	}
	out, err := array.Concatenate(cells, tc.Alloc)
	if err != nil {
		return nil, errs.Internalf("scalar subquery result: %v", err)
	}
	return out, nil
}

// value runs the plan and returns its single value as a 1-element array (NULL when no row).
func (s *ScalarSubquery) value(ctx context.Context, tc *TaskContext) (arrow.Array, error) {
	rdr, err := executeMerged(ctx, s.plan, tc)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var found arrow.Array
	for rdr.Next() {
		b := rdr.RecordBatch()
		if b.NumRows() == 0 {
			continue
		}
		if found != nil || b.NumRows() > 1 {
			if found != nil {
				found.Release()
			}
			return nil, errs.Invalidf("subquery returns more than 1 row")
		}
		found = b.Column(0)
		found.Retain()
	}
	if err := rdr.Err(); err != nil {
		if found != nil {
			found.Release()
		}
		return nil, err
	}
	if found == nil {
		return array.MakeArrayOfNull(tc.Alloc, s.DataType(), 1), nil
	}
	return found, nil
}

// Exists is [NOT] EXISTS (SELECT …): TRUE when the plan yields at least one row (negated: when
// it yields none). It is never NULL.
type Exists struct {
	plan                Operator
	negated, correlated bool
}

// NewExists returns an [NOT] EXISTS expression over plan.
func NewExists(plan Operator, negated, correlated bool) Expr {
	return &Exists{plan: plan, negated: negated, correlated: correlated}
}

func (e *Exists) DataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }
func (e *Exists) Plan() Operator           { return e.plan }

func (e *Exists) String() string {
	if e.negated {
		return "NOT EXISTS(" + subqueryLabel(e.correlated) + ")"
	}
	return "EXISTS(" + subqueryLabel(e.correlated) + ")"
}

func (e *Exists) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	n := int(batch.NumRows())
	b := array.NewBooleanBuilder(tc.Alloc)
	defer b.Release()
	b.Reserve(n)
	if !e.correlated {
		cached, err := tc.Cache.Do(e, func() (any, error) { return hasRow(ctx, e.plan, tc) })
		if err != nil {
			return nil, err
		}
		found := cached.(bool)
		for range n {
			b.UnsafeAppend(found != e.negated)
		}
		return b.NewArray(), nil
	}
	for row := range n {
		found, err := hasRow(ctx, e.plan, tc.WithOuter(batch, row))
		if err != nil {
			return nil, err
		}
		b.UnsafeAppend(found != e.negated)
	}
	return b.NewArray(), nil
}

// hasRow runs plan until its first row and reports whether there was one; it stops the plan
// early once a row is seen.
func hasRow(ctx context.Context, plan Operator, tc *TaskContext) (bool, error) {
	rdr, err := executeMerged(ctx, plan, tc)
	if err != nil {
		return false, err
	}
	defer rdr.Release()
	b, err := nextNonEmpty(rdr)
	if b != nil {
		b.Release()
		return true, nil
	}
	return false, err
}

// subqueryColumnType is the type of a one-column subquery plan (null when it has none).
func subqueryColumnType(plan Operator) arrow.DataType {
	if plan.Schema().NumFields() == 0 {
		return arrow.Null
	}
	return plan.Schema().Field(0).Type
}

func checkOneColumn(plan Operator) error {
	if n := plan.Schema().NumFields(); n != 1 {
		return errs.Invalidf("Operand should contain 1 column(s), subquery has %d", n)
	}
	return nil
}

func subqueryLabel(correlated bool) string {
	if correlated {
		return "correlated subquery"
	}
	return "subquery"
}
