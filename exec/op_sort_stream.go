package exec

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/util"
	"golang.org/x/sync/errgroup"

	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/internal/safe"
	"github.com/cachedb/cachedb/internal/stream"
)

// sortStream is the single partition of a Sort. The first Next reads every input partition
// concurrently into per-partition runs (cut back to the best fetch rows as they grow when fetch is
// set), then merges the runs into one sorted run; later calls gather the rows in order, at most
// tc.RowsPerBatch() per batch.
//
// Memory: each partition's run reserves twice the bytes of the batches it buffers (the second
// half covers the concatenated copy that sorting makes) from tc's group. When a reservation is
// refused the run is sorted, written to a spill file and dropped, and reading goes on; if any
// run was spilled, every run is, and the output is a streaming k-way merge of the spill files
// (see sortMerge), which keeps one batch per run in memory, reserved too. A batch that cannot
// be reserved even after its run was spilled, or a merge whose batches cannot be reserved,
// fails the query with the pool's errs.ResourceExhausted error. Every reservation is freed and
// every spill file removed when the reader is released.
type sortStream struct {
	ctx    context.Context
	op     *Sort
	tc     *TaskContext
	sorted arrow.RecordBatch // all remaining rows: input columns, then evaluated key columns
	order  []int32           // rows of sorted in output order
	pos    int
	ready  bool

	files    *spillFiles
	mu       sync.Mutex
	spilled  []*spillRun // guarded by mu, in the order they were written
	reserved []*mempool.Reservation
	merge    *sortMerge
}

func (s *sortStream) next() (arrow.RecordBatch, error) {
	if !s.ready {
		if err := s.gather(); err != nil {
			return nil, err
		}
		s.ready = true
	}
	if s.merge != nil {
		b, err := s.merge.next(s.ctx)
		if b == nil && err == nil {
			s.release()
		}
		return b, err
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

// gather reads all input partitions and sorts their rows, in memory or through spill files.
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
	if err == nil && len(s.spilled) > 0 {
		for _, r := range runs {
			if err = r.spill(s.ctx); err != nil {
				break
			}
		}
	}
	// The partitions' reservations stay until release: they cover the concatenated copy the
	// in-memory sort makes. Spilled runs hold nothing, and their reservations go now, so that
	// the merge does not share the query's memory with them.
	if len(s.spilled) > 0 {
		s.freeReservations()
	}
	merged := &sortRun{tc: s.tc, keys: s.op.keys, fetch: s.op.fetch, input: s.op.input.Schema()}
	for _, r := range runs {
		merged.batches = append(merged.batches, r.batches...)
		merged.rows += r.rows
		r.batches = nil
	}
	defer merged.release()
	if err != nil {
		return err
	}
	if len(s.spilled) > 0 {
		s.merge = newSortMerge(s.tc, s.op, s.files, s.op.input.Schema(), s.spilled)
		return nil
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
	res := s.tc.Reserve(sortConsumer)
	s.mu.Lock()
	s.reserved = append(s.reserved, res)
	s.mu.Unlock()
	return &sortRun{tc: s.tc, keys: s.op.keys, fetch: s.op.fetch, input: s.op.input.Schema(), res: res, stream: s}
}

// addSpilled records a run written to disk.
func (s *sortStream) addSpilled(r *spillRun) {
	s.mu.Lock()
	s.spilled = append(s.spilled, r)
	s.mu.Unlock()
}

// release frees everything the stream holds; it runs at the end of the output and when the
// reader is released, whichever comes first (and is harmless twice).
func (s *sortStream) release() {
	if s.sorted != nil {
		s.sorted.Release()
		s.sorted = nil
	}
	s.order = nil
	if s.merge != nil {
		s.merge.release()
		s.merge = nil
	}
	s.freeReservations()
	if s.files != nil {
		s.files.removeAll()
	}
}

func (s *sortStream) freeReservations() {
	s.mu.Lock()
	reserved := s.reserved
	s.reserved = nil
	s.mu.Unlock()
	for _, r := range reserved {
		r.Free()
	}
}

// spillFiles returns the stream's spill files, creating the set on first use.
func (s *sortStream) spillFiles() *spillFiles {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = newSpillFiles(s.ctx, s.tc, "sort")
	}
	return s.files
}

// sortRun is a set of batches not yet in order, each extended with its evaluated sort keys.
type sortRun struct {
	tc      *TaskContext
	keys    []SortKey
	fetch   int64
	input   *arrow.Schema
	batches []arrow.RecordBatch
	rows    int64
	// res holds twice the bytes of batches; stream spills the run when it is refused more.
	res    *mempool.Reservation
	stream *sortStream
}

// add evaluates the sort keys of batch and keeps it with them, spilling the run first when
// its reservation cannot grow by the batch.
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
	extended := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, batch.NumRows())
	aggReleaseArrays(keyCols)
	if err := r.reserve(ctx, sortHeldBytes(extended)); err != nil {
		extended.Release()
		return err
	}
	r.batches = append(r.batches, extended)
	r.rows += batch.NumRows()
	return nil
}

// sortHeldBytes is what buffering b costs a sort: b, the copy of it that sorting concatenates,
// and its entry in the sort order.
func sortHeldBytes(b arrow.RecordBatch) int64 {
	return 2*util.TotalRecordSize(b) + 4*b.NumRows()
}

// reserve grows the run's reservation by n, spilling the run to disk first if that is refused.
func (r *sortRun) reserve(ctx context.Context, n int64) error {
	err := r.res.TryGrow(n)
	if err == nil || !isExhausted(err) || len(r.batches) == 0 {
		return err
	}
	if err := r.spill(ctx); err != nil {
		return err
	}
	return r.res.TryGrow(n)
}

// spill sorts the run, writes it to a spill file and empties it.
func (r *sortRun) spill(ctx context.Context) error {
	if len(r.batches) == 0 {
		return nil
	}
	all, order, err := r.sort(ctx)
	if err != nil {
		return err
	}
	defer all.Release()
	w, err := r.stream.spillFiles().create(all.Schema(), r.tc.Alloc)
	if err != nil {
		return err
	}
	step := r.tc.RowsPerBatch()
	for i := 0; i < len(order); i += step {
		chunk, err := sortTake(ctx, r.tc, all, all.Schema(), order[i:min(i+step, len(order))])
		if err == nil {
			err = w.write(chunk)
			chunk.Release()
		}
		if err != nil {
			w.abort()
			return err
		}
	}
	run, err := w.finish()
	if err != nil {
		return err
	}
	r.stream.addSpilled(run)
	r.release()
	r.res.Shrink(r.res.Size())
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
	// Ties broken by row number make the order total, so the unstable pattern-defeating
	// quicksort gives the stable order, with fewer moves than a stable sort's in-place merges.
	slices.SortFunc(order, func(a, b int32) int {
		if c := compare(a, b); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
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
	_ = r.res.Resize(sortHeldBytes(best))
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
	cols, err := takeColumns(ctx, tc, src.Columns()[:schema.NumFields()], idx)
	if err != nil {
		return nil, fmt.Errorf("gathering sorted rows: %w", err)
	}
	defer releaseArrays(cols)
	return array.NewRecordBatch(schema, cols, int64(len(idx))), nil
}
