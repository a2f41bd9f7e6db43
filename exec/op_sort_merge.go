package exec

import (
	"container/heap"
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
)

// sortMerge streams the rows of sorted spill runs in order: a k-way merge over a heap of run
// cursors, each holding one batch of its run (input columns, then key columns). Rows with equal
// keys come from the earlier run first, so the merge keeps the order of a partition's runs. It
// stops after fetch rows when fetch > 0.
//
// The batches the cursors hold are reserved from the query's memory. When not every run's
// batch can be held, the runs whose batches could be (at least two) are merged first into one
// new run, and the merge starts over with fewer runs; a merge that cannot hold two batches
// fails with the pool's errs.ResourceExhausted error.
type sortMerge struct {
	tc      *TaskContext
	op      *Sort
	files   *spillFiles
	schema  *arrow.Schema // of the output: the input's, or the runs' own for an intermediate merge
	runs    []*spillRun
	cursors []*mergeCursor
	heap    mergeHeap
	res     *mempool.Reservation
	ownRes  bool  // the merge frees res (an intermediate merge borrows its parent's)
	left    int64 // rows still to output when fetch is set
	started bool
}

// mergeCursor is the current batch and row of one run.
type mergeCursor struct {
	index int
	rdr   *spillReader
	batch arrow.RecordBatch
	keys  []arrow.Array
	row   int32
	gen   int   // counts batches, so cached comparators notice a new one
	size  int64 // reserved for the cursor's batches
}

func newSortMerge(tc *TaskContext, op *Sort, files *spillFiles, schema *arrow.Schema, runs []*spillRun) *sortMerge {
	m := &sortMerge{tc: tc, op: op, files: files, schema: schema, runs: runs, res: tc.Reserve(sortConsumer), ownRes: true, left: op.fetch}
	m.heap.merge = m
	return m
}

// start opens the runs, merging some of them first while not all fit.
func (m *sortMerge) start(ctx context.Context) error {
	m.started = true
	for {
		loaded, err := m.open()
		if err == nil || !isExhausted(err) || loaded < 2 {
			return err
		}
		m.closeAll()
		merged, err := m.mergeRuns(ctx, m.runs[:loaded])
		if err != nil {
			return err
		}
		m.runs = append([]*spillRun{merged}, m.runs[loaded:]...)
	}
}

// mergeRuns merges runs into one new run.
func (m *sortMerge) mergeRuns(ctx context.Context, runs []*spillRun) (*spillRun, error) {
	sub := &sortMerge{tc: m.tc, op: m.op, files: m.files, schema: runs[0].schema, runs: runs, res: m.res, left: m.op.fetch}
	sub.heap.merge = sub
	defer sub.release()
	w, err := m.files.create(runs[0].schema, m.tc.Alloc)
	if err != nil {
		return nil, err
	}
	for {
		b, err := sub.next(ctx)
		if err == nil && b != nil {
			err = w.write(b)
			b.Release()
		}
		if err != nil {
			w.abort()
			return nil, err
		}
		if b == nil {
			return w.finish()
		}
	}
}

// open opens every run and loads its first batch, returning how many runs it loaded before an
// error.
func (m *sortMerge) open() (int, error) {
	desc := make([]bool, len(m.op.keys))
	for i, k := range m.op.keys {
		desc[i] = k.Desc
	}
	m.heap.desc = desc
	m.heap.cmps = map[[2]int]cachedComparator{}
	m.heap.items = nil
	for i, r := range m.runs {
		rdr, err := r.open(m.tc.Alloc)
		if err != nil {
			return i, err
		}
		if err := m.res.TryGrow(r.maxBatch); err != nil {
			rdr.close()
			return i, err
		}
		c := &mergeCursor{index: i, rdr: rdr, size: r.maxBatch}
		m.cursors = append(m.cursors, c)
		ok, err := m.load(c)
		if err != nil {
			return i, err
		}
		if ok {
			m.heap.items = append(m.heap.items, c)
		}
	}
	heap.Init(&m.heap)
	return len(m.runs), m.heap.err
}

// load replaces c's batch with the next batch of its run, reporting false at the run's end.
// The cursor's reservation (its run's largest batch) was made when it was opened.
func (m *sortMerge) load(c *mergeCursor) (bool, error) {
	m.drop(c)
	b, err := c.rdr.next()
	if err != nil || b == nil {
		return false, err
	}
	nIn := m.op.input.Schema().NumFields()
	c.batch, c.keys, c.row = b, b.Columns()[nIn:], 0
	c.gen++
	return true, nil
}

// drop releases c's batch.
func (m *sortMerge) drop(c *mergeCursor) {
	if c.batch != nil {
		c.batch.Release()
		c.batch, c.keys = nil, nil
	}
}

// next returns the next batch of output rows, or nil at the end.
func (m *sortMerge) next(ctx context.Context) (arrow.RecordBatch, error) {
	if !m.started {
		if err := m.start(ctx); err != nil {
			return nil, err
		}
	}
	limit := int64(m.tc.RowsPerBatch())
	if m.op.fetch > 0 {
		limit = min(limit, m.left)
	}
	// Output rows are contiguous row ranges of cursor batches, each retained until the batch
	// is built.
	type segment struct {
		batch      arrow.RecordBatch
		start, end int64
	}
	var segs []segment
	defer func() {
		for _, s := range segs {
			s.batch.Release()
		}
	}()
	rows := int64(0)
	for rows < limit && m.heap.Len() > 0 {
		c := m.heap.items[0]
		row := int64(c.row)
		if n := len(segs); n > 0 && segs[n-1].batch == c.batch && segs[n-1].end == row {
			segs[n-1].end++
		} else {
			c.batch.Retain()
			segs = append(segs, segment{batch: c.batch, start: row, end: row + 1})
		}
		rows++
		c.row++
		if int64(c.row) < c.batch.NumRows() {
			heap.Fix(&m.heap, 0)
		} else {
			ok, err := m.load(c)
			if err != nil {
				return nil, err
			}
			if ok {
				heap.Fix(&m.heap, 0)
			} else {
				heap.Pop(&m.heap)
			}
		}
		if m.heap.err != nil {
			return nil, m.heap.err
		}
	}
	if rows == 0 {
		return nil, nil
	}
	m.left -= rows
	if m.op.fetch > 0 && m.left <= 0 {
		m.heap.items = nil
	}
	schema := m.schema
	cols := make([]arrow.Array, schema.NumFields())
	defer releaseAll(cols)
	parts := make([]arrow.Array, len(segs))
	for c := range cols {
		for i, s := range segs {
			parts[i] = array.NewSlice(s.batch.Column(c), s.start, s.end)
		}
		col, err := array.Concatenate(parts, m.tc.Alloc)
		releaseAll(parts)
		if err != nil {
			return nil, errs.Internalf("merging sorted runs: %v", err)
		}
		cols[c] = col
	}
	return array.NewRecordBatch(schema, cols, rows), nil
}

// closeAll closes every open run and drops the cursors' batches.
func (m *sortMerge) closeAll() {
	for _, c := range m.cursors {
		m.drop(c)
		c.rdr.close()
		m.res.Shrink(c.size)
	}
	m.cursors, m.heap.items = nil, nil
}

// release closes every run and frees the cursors' batches and reservation.
func (m *sortMerge) release() {
	m.closeAll()
	if m.ownRes {
		m.res.Free()
	}
}

// mergeHeap orders cursors by their current rows, then by run index.
type mergeHeap struct {
	merge *sortMerge
	items []*mergeCursor
	desc  []bool
	cmps  map[[2]int]cachedComparator
	err   error
}

// cachedComparator compares the current batches of two cursors, made for batch generations
// ga and gb.
type cachedComparator struct {
	ga, gb int
	cmp    func(a, b int32) int
}

func (h *mergeHeap) Len() int      { return len(h.items) }
func (h *mergeHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *mergeHeap) Push(x any)    { h.items = append(h.items, x.(*mergeCursor)) }
func (h *mergeHeap) Pop() any {
	n := len(h.items)
	x := h.items[n-1]
	h.items = h.items[:n-1]
	return x
}

func (h *mergeHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	key := [2]int{a.index, b.index}
	cc, ok := h.cmps[key]
	if !ok || cc.ga != a.gen || cc.gb != b.gen {
		cmp, err := sortRowsComparator(a.keys, b.keys, h.desc)
		if err != nil {
			if h.err == nil {
				h.err = err
			}
			return a.index < b.index
		}
		cc = cachedComparator{ga: a.gen, gb: b.gen, cmp: cmp}
		h.cmps[key] = cc
	}
	if r := cc.cmp(a.row, b.row); r != 0 {
		return r < 0
	}
	return a.index < b.index
}
