package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/stream"
)

// NestedLoopJoin joins every left row with every right row, keeping the pairs for which the
// condition is TRUE (all pairs when it is nil: a cross join). Each Execute materializes the
// whole right side (reserved from the query's memory; it does not spill, so a right side that
// does not fit fails the query with errs.ResourceExhausted), then streams the left partition, enumerating pairs in chunks of at most
// TaskContext.RowsPerBatch so output batches stay bounded however large the product is. It has
// the left side's partitions.
type NestedLoopJoin struct {
	left, right Operator
	kind        JoinKind
	cond        Expr
	schema      *arrow.Schema
}

// NewNestedLoopJoin returns a join of kind over left and right on cond (evaluated over the
// left ++ right columns; nil for a cross join). Output columns follow JoinKind.
func NewNestedLoopJoin(left, right Operator, kind JoinKind, cond Expr) (Operator, error) {
	if !kind.valid() {
		return nil, errs.Internalf("unknown join kind %d", int(kind))
	}
	out, _ := joinSchemas(kind, left.Schema(), right.Schema())
	return &NestedLoopJoin{left: left, right: right, kind: kind, cond: cond, schema: out}, nil
}

func (j *NestedLoopJoin) Schema() *arrow.Schema { return j.schema }
func (j *NestedLoopJoin) Children() []Operator  { return []Operator{j.left, j.right} }
func (j *NestedLoopJoin) Partitions() int       { return j.left.Partitions() }

func (j *NestedLoopJoin) String() string {
	if j.cond == nil {
		return fmt.Sprintf("NestedLoopJoin: %s", j.kind)
	}
	return fmt.Sprintf("NestedLoopJoin: %s on %s", j.kind, j.cond)
}

func (j *NestedLoopJoin) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	res := tc.Reserve(crossJoinConsumer)
	build, err := materialize(ctx, tc, j.right, res)
	if err != nil {
		res.Free()
		return nil, err
	}
	left, err := j.left.Execute(ctx, partition, tc)
	if err != nil {
		build.Release()
		res.Free()
		return nil, err
	}
	joiner := newPairJoiner(j.kind, j.cond, j.left.Schema(), j.right.Schema(), build)
	nright := int(build.NumRows())
	s := &joinStream{ctx: ctx, tc: tc, left: left, joiner: joiner}
	s.newSource = func(b arrow.RecordBatch) (pairSource, error) {
		return &crossPairs{nleft: int(b.NumRows()), nright: nright, firstOnly: joiner.existsOnly()}, nil
	}
	return stream.Pull(ctx, j.schema, s.pull, s.close(func() {
		build.Release()
		res.Free()
	})), nil
}

// crossPairs enumerates the cartesian product of nleft × nright rows in row-major order; with
// firstOnly, only the first pair of each left row.
type crossPairs struct {
	nleft, nright int
	firstOnly     bool
	i, j          int
}

func (c *crossPairs) next(limit int) (li, ri []int32, done bool) {
	if c.nright == 0 {
		return nil, nil, true
	}
	for c.i < c.nleft && len(li) < limit {
		li, ri = append(li, int32(c.i)), append(ri, int32(c.j))
		c.j++
		if c.j == c.nright || c.firstOnly {
			c.i, c.j = c.i+1, 0
		}
	}
	return li, ri, c.i >= c.nleft
}

func (c *crossPairs) release() {}
