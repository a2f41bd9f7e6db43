package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// PartitionedLeftBuildJoin is the left-build form of NewPartitionedHashJoin: a semi, anti or
// null-aware anti join whose partition p is a LeftBuildHashJoin of partition p of left with
// partition p of right only, so that a small left side (orders of one quarter) is hashed and the
// large right side (their lines) streams through it, bucket by bucket, instead of the large side
// being hashed. Both sides must be partitioned alike by their keys, as a distributed plan's
// shuffles do.
type PartitionedLeftBuildJoin struct {
	left, right Operator
	joins       []*LeftBuildHashJoin // joins[p] joins the one-partition shares p of both sides
}

// NewPartitionedLeftBuildJoin returns the join of left and right, partition by partition.
func NewPartitionedLeftBuildJoin(left, right Operator, kind JoinKind, leftKeys, rightKeys []Expr, residual Expr) (Operator, error) {
	if left.Partitions() != right.Partitions() {
		return nil, errs.Internalf("partitioned hash join of %d and %d partitions", left.Partitions(), right.Partitions())
	}
	j := &PartitionedLeftBuildJoin{left: left, right: right}
	for p := range left.Partitions() {
		l, err := NewShareOf(left, []int{p})
		if err != nil {
			return nil, err
		}
		r, err := NewShareOf(right, []int{p})
		if err != nil {
			return nil, err
		}
		join, err := NewLeftBuildHashJoin(l, r, kind, leftKeys, rightKeys, residual)
		if err != nil {
			return nil, err
		}
		j.joins = append(j.joins, join)
	}
	if len(j.joins) == 0 {
		return nil, errs.Internalf("partitioned hash join without partitions")
	}
	return j, nil
}

func (j *PartitionedLeftBuildJoin) Schema() *arrow.Schema { return j.left.Schema() }
func (j *PartitionedLeftBuildJoin) Children() []Operator  { return []Operator{j.left, j.right} }
func (j *PartitionedLeftBuildJoin) Partitions() int       { return len(j.joins) }

func (j *PartitionedLeftBuildJoin) String() string {
	return "Partitioned" + j.joins[0].String()
}

func (j *PartitionedLeftBuildJoin) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	if partition < 0 || partition >= len(j.joins) {
		return nil, errs.Internalf("partitioned hash join has %d partitions, asked for %d", len(j.joins), partition)
	}
	return j.joins[partition].Execute(ctx, 0, tc)
}
