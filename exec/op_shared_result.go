package exec

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/util"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
)

// SharedResult computes a plan that several parts of one query read (a common table
// expression referenced more than once): the first SharedRead of an execution runs every
// partition of the input and keeps its batches in the query's cache (TaskContext.Cache), and
// every SharedRead of the same SharedResult, in any partition and for any outer row, reads
// those batches. The input must read no column of an enclosing query, so its rows are the same
// wherever it is read. Without a cache each read computes the input again.
//
// The kept batches are reserved from the query's memory until the cache is released.
type SharedResult struct {
	input Operator
	name  string
}

// NewSharedResult returns the shared computation of input; name labels it in EXPLAIN.
func NewSharedResult(input Operator, name string) *SharedResult {
	return &SharedResult{input: input, name: name}
}

func (s *SharedResult) Schema() *arrow.Schema { return s.input.Schema() }
func (s *SharedResult) Children() []Operator  { return []Operator{s.input} }
func (s *SharedResult) Partitions() int       { return s.input.Partitions() }
func (s *SharedResult) String() string {
	return fmt.Sprintf("SharedResult: %s (computed once per query)", s.name)
}

// Execute reads partition p of the shared result.
func (s *SharedResult) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	return readShared(ctx, s, s.Schema(), partition, tc)
}

// sharedState is a SharedResult's entry in the query's cache. mu is held while the input is
// computed, so concurrent readers wait for the first.
type sharedState struct {
	mu   sync.Mutex
	rows *sharedRows
	err  error
}

func (st *sharedState) Release() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.rows != nil {
		st.rows.Release()
		st.rows = nil
	}
}

// rows returns the input's batches, computed once per query cache; release tells whether the
// caller must release them (without a cache they are its own). A computation that failed
// because the caller's ctx ended is not kept: that reader was stopped (a LIMIT above it had
// enough rows), and another reader of the same query computes the rows again.
func (s *SharedResult) rows(ctx context.Context, tc *TaskContext) (rows *sharedRows, release bool, err error) {
	v, err := tc.Cache.Do(s, func() (any, error) { return &sharedState{}, nil })
	if err != nil {
		return nil, false, err
	}
	st := v.(*sharedState)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.rows != nil || st.err != nil {
		return st.rows, false, st.err
	}
	rows, err = s.compute(ctx, tc)
	if err != nil {
		if ctx.Err() == nil {
			st.err = err
		}
		return nil, false, err
	}
	if tc.Cache == nil {
		return rows, true, nil
	}
	st.rows = rows
	return rows, false, nil
}

// readShared reads partition of s's rows as batches of schema.
func readShared(ctx context.Context, s *SharedResult, schema *arrow.Schema, partition int, tc *TaskContext) (array.RecordReader, error) {
	if partition < 0 || partition >= s.Partitions() {
		return nil, errs.Internalf("shared result has %d partitions, asked for %d", s.Partitions(), partition)
	}
	rows, release, err := s.rows(ctx, tc)
	if err != nil {
		return nil, err
	}
	if release {
		defer rows.Release()
	}
	batches := make([]arrow.RecordBatch, len(rows.parts[partition]))
	for i, b := range rows.parts[partition] {
		batches[i] = array.NewRecordBatch(schema, b.Columns(), b.NumRows())
	}
	rdr, err := array.NewRecordReader(schema, batches)
	releaseBatches(batches)
	return rdr, err
}

// sharedRows are the batches of each input partition; Release frees them and their
// reservation.
type sharedRows struct {
	parts [][]arrow.RecordBatch
	res   *mempool.Reservation
	once  sync.Once
}

func (r *sharedRows) Release() {
	r.once.Do(func() {
		for _, p := range r.parts {
			releaseBatches(p)
		}
		r.res.Free()
	})
}

// compute runs every partition of the input concurrently, as one run (a private copy of tc,
// see Coalesce.Execute), keeping each partition's non-empty batches. The run outlives no
// caller: ctx is the first reader's, and a canceled first reader fails the query.
func (s *SharedResult) compute(ctx context.Context, tc *TaskContext) (*sharedRows, error) {
	runTC := *tc
	runTC.Outer = nil
	res := tc.Reserve(sharedResultConsumer)
	parts, err := collectPartitions(ctx, s.input, &runTC, res, func(b arrow.RecordBatch) int64 { return int64(util.TotalRecordSize(b)) }, "shared result")
	if err != nil {
		res.Free()
		return nil, err
	}
	return &sharedRows{parts: parts, res: res}, nil
}

// SharedRead is one reference to a SharedResult, under its own column names.
type SharedRead struct {
	result *SharedResult
	schema *arrow.Schema
}

// NewSharedRead returns a read of result whose columns are named as in schema (whose types
// must be result's).
func NewSharedRead(result *SharedResult, schema *arrow.Schema) (Operator, error) {
	in := result.Schema()
	if in.NumFields() != schema.NumFields() {
		return nil, errs.Internalf("shared result has %d columns, its reference %d", in.NumFields(), schema.NumFields())
	}
	for i := range in.NumFields() {
		if !arrow.TypeEqual(in.Field(i).Type, schema.Field(i).Type) {
			return nil, errs.Internalf("shared result column %d is %s, its reference's %s", i, in.Field(i).Type, schema.Field(i).Type)
		}
	}
	return &SharedRead{result: result, schema: schema}, nil
}

func (r *SharedRead) Schema() *arrow.Schema { return r.schema }
func (r *SharedRead) Children() []Operator  { return []Operator{r.result} }
func (r *SharedRead) Partitions() int       { return r.result.Partitions() }
func (r *SharedRead) String() string        { return "SharedRead: " + r.result.name }

func (r *SharedRead) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	return readShared(ctx, r.result, r.schema, partition, tc)
}
