// Package exec holds the physical operators and physical expressions of cachedb. Operators are
// immutable trees; executing one partition of an operator yields a pull-based stream of Arrow
// record batches. Parallelism comes only from partitions (and the Repartition / Coalesce
// operators), never from goroutines hidden inside a scan, and every buffer comes from the
// allocator in the TaskContext.
package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/internal/mempool"
)

// Operator is a node of a physical plan.
//
// Contract:
//   - Execute(ctx, p, tc) for 0 <= p < Partitions() returns a reader over partition p's output;
//     the caller owns the reader and must Release it; readers follow internal/stream's
//     reference contract. Readers stop with stream.Stopped(ctx) (errs.Canceled wrapping ctx's
//     cause, or the categorized cause) when ctx ends. Each partition may be executed concurrently with the others, and an operator may
//     be executed several times (e.g. once per outer row for a correlated subquery).
//   - Every batch a reader yields has exactly Schema() (same field names and types).
//   - String() is one line describing the node for EXPLAIN (without its children).
type Operator interface {
	Schema() *arrow.Schema
	Children() []Operator
	Partitions() int
	Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error)
	String() string
}

// TaskContext carries what every operator and expression needs while executing.
type TaskContext struct {
	// Alloc is the only source of memory for new buffers.
	Alloc memory.Allocator
	// Params are the values bound to ? placeholders, in order.
	Params []scalar.Scalar
	// Outer is the row a correlated subquery is being evaluated for (nil at top level).
	Outer *OuterRow
	// BatchSize is the preferred number of rows per output batch (0 = DefaultBatchSize).
	BatchSize int
	// Cache holds what is computed once per query execution (nil: nothing is cached). Copies
	// of the context share it.
	Cache *QueryCache
	// Exchange reaches the other data nodes of a distributed execution (nil when the query runs
	// in one process); Shuffle operators need it.
	Exchange Exchange
	// Memory is the query's share of the process's memory pool: operators reserve what they
	// hold beyond one batch (hash tables, sort runs, aggregates) from it before holding it, and
	// free it when they are released (nil: nothing is limited; see Reserve).
	Memory *mempool.Group
	// SpillDir is the directory operators write spill files to when their memory is refused
	// ("": a cachedb-spill-<pid> directory under os.TempDir()). Every file an operator writes
	// there is removed when its reader is released.
	SpillDir string
	// Spill bounds the spill files of the process (nil: no bound).
	Spill *SpillBudget
}

// unlimitedMemory serves the reservations of task contexts without a Memory group.
var unlimitedMemory = mempool.Unlimited().Group("this query", 0)

// Reserve returns an empty reservation of the query's memory for c; the caller frees it.
func (tc *TaskContext) Reserve(c mempool.Consumer) *mempool.Reservation {
	if tc.Memory == nil {
		return unlimitedMemory.Reserve(c)
	}
	return tc.Memory.Reserve(c)
}

// DefaultBatchSize is the row count operators aim for when they build new batches.
const DefaultBatchSize = 8192

// RowsPerBatch returns the batch size to aim for.
func (tc *TaskContext) RowsPerBatch() int {
	if tc.BatchSize > 0 {
		return tc.BatchSize
	}
	return DefaultBatchSize
}

// WithOuter returns a copy of tc whose Outer row is (batch, row) nested in tc's own Outer.
func (tc *TaskContext) WithOuter(batch arrow.RecordBatch, row int) *TaskContext {
	c := *tc
	c.Outer = &OuterRow{Batch: batch, Row: row, Parent: tc.Outer}
	return &c
}

// OuterRow is one row of an enclosing query, seen by a correlated subquery. Parent is the row of
// the query enclosing that one, for subqueries nested more than one level deep.
type OuterRow struct {
	Batch  arrow.RecordBatch
	Row    int
	Parent *OuterRow
}
