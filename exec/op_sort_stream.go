package exec

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"golang.org/x/sync/errgroup"

	"github.com/cachedb/cachedb/internal/safe"
	"github.com/cachedb/cachedb/internal/stream"
)

// sortStream is the single partition of a Sort. The first Next reads every input partition
// concurrently into per-partition runs (cut back to the best fetch rows as they grow when fetch is
// set), then merges the runs into one sorted run; later calls gather the rows in order, at most
// tc.RowsPerBatch() per batch.
type sortStream struct {
	ctx    context.Context
	op     *Sort
	tc     *TaskContext
	sorted arrow.RecordBatch // all remaining rows: input columns, then evaluated key columns
	order  []int32           // rows of sorted in output order
	pos    int
	ready  bool
}

func (s *sortStream) next() (arrow.RecordBatch, error) {
	if !s.ready {
		if err := s.gather(); err != nil {
			return nil, err
		}
		s.ready = true
	}
	if s.pos >= len(s.order) {
		s.release()
		return nil, nil
	}
	end := min(s.pos+s.tc.RowsPerBatch(), len(s.order))
	batch, err := sortTake(s.ctx, s.tc, s.sorted, s.op.input.Schema(), s.order[s.pos:end])
	if err != nil {
		return nil, err
	}
	s.pos = end
	return batch, nil
}

// gather reads all input partitions and sorts their rows.
func (s *sortStream) gather() error {
	parts := s.op.input.Partitions()
	runs := make([]*sortRun, parts)
	for i := range runs {
		runs[i] = s.newRun()
	}
	g, gctx := errgroup.WithContext(s.ctx)
	for p := 0; p < parts; p++ {
		safe.Go(g, "sort", func() error { return s.readPartition(gctx, p, runs[p]) })
	}
	err := g.Wait()
	merged := s.newRun()
	for _, r := range runs {
		merged.batches = append(merged.batches, r.batches...)
		merged.rows += r.rows
		r.batches = nil
	}
	defer merged.release()
	if err != nil {
		return err
	}
	s.sorted, s.order, err = merged.sort(s.ctx)
	return err
}

// readPartition reads input partition p into run, evaluating the sort keys of each batch.
func (s *sortStream) readPartition(ctx context.Context, p int, run *sortRun) error {
	rdr, err := s.op.input.Execute(ctx, p, s.tc)
	if err != nil {
		return err
	}
	defer rdr.Release()
	threshold := max(2*s.op.fetch, int64(s.tc.RowsPerBatch()))
	for rdr.Next() {
		if err := stream.Stopped(ctx); err != nil {
			return err
		}
		if err := run.add(ctx, rdr.RecordBatch()); err != nil {
			return err
		}
		if s.op.fetch > 0 && run.rows >= threshold {
			if err := run.compact(ctx); err != nil {
				return err
			}
		}
	}
	return rdr.Err()
}

func (s *sortStream) newRun() *sortRun {
	return &sortRun{tc: s.tc, keys: s.op.keys, fetch: s.op.fetch, input: s.op.input.Schema()}
}

func (s *sortStream) release() {
	if s.sorted != nil {
		s.sorted.Release()
		s.sorted = nil
	}
	s.order = nil
}

// sortRun is a set of batches not yet in order, each extended with its evaluated sort keys.
type sortRun struct {
	tc      *TaskContext
	keys    []SortKey
	fetch   int64
	input   *arrow.Schema
	batches []arrow.RecordBatch
	rows    int64
}

// add evaluates the sort keys of batch and keeps it with them.
func (r *sortRun) add(ctx context.Context, batch arrow.RecordBatch) error {
	if batch.NumRows() == 0 {
		return nil
	}
	cols := make([]arrow.Array, 0, int(batch.NumCols())+len(r.keys))
	cols = append(cols, batch.Columns()...)
	fields := slices.Clone(r.input.Fields())
	var keyCols []arrow.Array
	for i, k := range r.keys {
		arr, err := k.Expr.Eval(ctx, r.tc, batch)
		if err != nil {
			aggReleaseArrays(keyCols)
			return fmt.Errorf("evaluating sort key %s: %w", k.Expr, err)
		}
		keyCols = append(keyCols, arr)
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("sort_key_%d", i), Type: arr.DataType(), Nullable: true})
	}
	cols = append(cols, keyCols...)
	r.batches = append(r.batches, array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, batch.NumRows()))
	aggReleaseArrays(keyCols)
	r.rows += batch.NumRows()
	return nil
}

// sort concatenates the run and orders it; with fetch set, only the first fetch rows are kept in
// the returned order. The caller releases the returned batch (nil for an empty run).
func (r *sortRun) sort(ctx context.Context) (arrow.RecordBatch, []int32, error) {
	if len(r.batches) == 0 {
		return nil, nil, nil
	}
	all, err := sortConcat(r.tc, r.batches)
	if err != nil {
		return nil, nil, err
	}
	nIn := r.input.NumFields()
	keyCols := all.Columns()[nIn:]
	desc := make([]bool, len(r.keys))
	for i, k := range r.keys {
		desc[i] = k.Desc
	}
	compare, err := sortRowComparator(keyCols, desc)
	if err != nil {
		all.Release()
		return nil, nil, err
	}
	order := make([]int32, all.NumRows())
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, compare)
	if r.fetch > 0 && int64(len(order)) > r.fetch {
		order = order[:r.fetch]
	}
	return all, order, nil
}

// compact cuts the run back to its first fetch rows, in order.
func (r *sortRun) compact(ctx context.Context) error {
	all, order, err := r.sort(ctx)
	if err != nil || all == nil {
		return err
	}
	defer all.Release()
	best, err := sortTake(ctx, r.tc, all, all.Schema(), order)
	if err != nil {
		return err
	}
	r.release()
	r.batches, r.rows = []arrow.RecordBatch{best}, best.NumRows()
	return nil
}

func (r *sortRun) release() {
	for _, b := range r.batches {
		b.Release()
	}
	r.batches, r.rows = nil, 0
}

// sortConcat concatenates batches of one schema into one batch.
func sortConcat(tc *TaskContext, batches []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(batches) == 1 {
		batches[0].Retain()
		return batches[0], nil
	}
	schema := batches[0].Schema()
	cols := make([]arrow.Array, 0, schema.NumFields())
	rows := int64(0)
	for _, b := range batches {
		rows += b.NumRows()
	}
	parts := make([]arrow.Array, len(batches))
	for c := 0; c < schema.NumFields(); c++ {
		for i, b := range batches {
			parts[i] = b.Column(c)
		}
		col, err := array.Concatenate(parts, tc.Alloc)
		if err != nil {
			aggReleaseArrays(cols)
			return nil, fmt.Errorf("concatenating sort input: %w", err)
		}
		cols = append(cols, col)
	}
	out := array.NewRecordBatch(schema, cols, rows)
	aggReleaseArrays(cols)
	return out, nil
}

// sortTake gathers rows idx of the first schema.NumFields() columns of src into a batch of
// schema.
func sortTake(ctx context.Context, tc *TaskContext, src arrow.RecordBatch, schema *arrow.Schema, idx []int32) (arrow.RecordBatch, error) {
	b := array.NewInt32Builder(tc.Alloc)
	b.AppendValues(idx, nil)
	indices := b.NewArray()
	b.Release()
	defer indices.Release()
	cctx := compute.WithAllocator(ctx, tc.Alloc)
	cols := make([]arrow.Array, 0, schema.NumFields())
	for c := 0; c < schema.NumFields(); c++ {
		col, err := compute.TakeArray(cctx, src.Column(c), indices)
		if err != nil {
			aggReleaseArrays(cols)
			return nil, fmt.Errorf("gathering sorted rows: %w", err)
		}
		cols = append(cols, col)
	}
	out := array.NewRecordBatch(schema, cols, int64(len(idx)))
	aggReleaseArrays(cols)
	return out, nil
}
