package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// Replicate gives every one of its n partitions all the rows of its input: Execute(p) runs
// every partition of the input, each time afresh, with a task context of its own (so that
// operators sharing state per task context, such as hash join builds, start over). Joining
// partition p of a distributed side with partition p of a Replicate (NewPartitionedHashJoin)
// joins each row of that side with the whole input wherever the partition runs, with nothing
// shuffled: what a distributed plan does with a join side small enough for every data node to
// compute it (planner/replicate.go).
type Replicate struct {
	input Operator
	n     int
}

// NewReplicate returns input replicated into n partitions.
func NewReplicate(input Operator, n int) *Replicate {
	return &Replicate{input: input, n: max(n, 1)}
}

func (r *Replicate) Schema() *arrow.Schema { return r.input.Schema() }
func (r *Replicate) Children() []Operator  { return []Operator{r.input} }
func (r *Replicate) Partitions() int       { return r.n }
func (r *Replicate) String() string {
	return fmt.Sprintf("Replicate: whole input into each of %d partitions", r.n)
}

func (r *Replicate) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	if partition < 0 || partition >= r.n {
		return nil, errs.Internalf("replicate has %d partitions, asked for %d", r.n, partition)
	}
	run := *tc
	return executeMerged(ctx, r.input, &run)
}
