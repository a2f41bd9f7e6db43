package node

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/stream"
)

// epochReader gathers the batches of a segment of a training read, which newEpochReader
// streams (stream.Pull). For each run of the reader's stretches that lies in one window it
// gathers those rows of the window (in parts of at most part rows, so that wide rows do not
// hold a whole window's worth at once), one column at a time, then hands them out in batches
// of up to target rows.
//
// A column at a time keeps the gather in cache. A narrow column's rows of the window are first
// copied together (the window's chunks are runs of consecutive rows), then picked in the
// shuffled order from that copy, which is small enough to stay in cache (256 KiB of float32 at
// the default window). A column whose rows are at least a cache line wide (an embedding, say)
// is picked straight from the partition's batches: every row read is whole cache lines anyway.
// Other layouts (strings, booleans, NULLs) are concatenated once per window and taken.
type epochReader struct {
	ctx    context.Context
	tc     *exec.TaskContext
	slice  engine.EpochSlice
	order  *cluster.EpochOrder
	parts  []memcat.Part
	schema *arrow.Schema
	// target and part bound a batch and a gathered part, in rows.
	target, part int64

	// pieces are the (window, epoch position range) stretches still to read.
	pieces []epochPiece
	// win is the window being read.
	win *epochWindow
	// gathered holds a part of win's rows (from row at of its reading order on), per column:
	// rows of them, sent of which are streamed already.
	gathered       []arrow.Array
	at, rows, sent int64
	// scratch holds one narrow column of a window's rows while they are gathered; buffers
	// allocates the gathered columns.
	scratch []byte
	buffers memory.Allocator
	// opened are the batches of the partitions read so far (memcat.Part.Open, from whatever
	// tier holds them), kept until the reader closes: a window's rows are read straight from
	// them.
	opened map[int]openedPart
	// fixed caches, by partition and read column, the column's rows in each of the partition's
	// batches as fixed-size bytes (exec.FixedRowBytes), for the windows that follow.
	fixed map[[2]int]fixedColumn
}

// fixedColumn is one column's rows in a partition's batches as fixed-size bytes; ok is false
// when some batch does not hold them so (a column with NULLs, say).
type fixedColumn struct {
	sources [][]byte
	ok      bool
}

type openedPart struct {
	batches []arrow.RecordBatch
	release func()
}

type epochPiece struct {
	window int
	g0, g1 int64
	// batchEnd is set when the piece ends one of the reader's batches.
	batchEnd bool
}

// epochWindow is what a reader knows of the window it reads.
type epochWindow struct {
	// batches are the window's partition's (partition part); stretches are the window's rows in
	// them, in window order, rows of them in all.
	part      int
	batches   []arrow.RecordBatch
	stretches []rowStretch
	rows      int64
	// idx are the window rows the reader reads, in reading order; next is the first of them
	// not gathered yet. batchEnds are the positions in idx at which one of the reader's
	// batches ends, ascending.
	idx       []int32
	next      int64
	batchEnds []int64
	// refs locate each window row in batches, made for the first wide column; fallback holds
	// the window's rows of the columns without fixed-size rows, made on first use.
	refs     []exec.RowRef
	fallback []arrow.Array
}

// newEpochReader streams segment s from the partitions parts in batches of up to target rows,
// gathering at most part rows (a multiple of target) at once; buffers allocates the gathered
// columns (every byte of which it writes). The stream follows internal/stream's contract; when
// it ends or is released, what it gathered and tc's cache are freed.
func newEpochReader(ctx context.Context, tc *exec.TaskContext, buffers memory.Allocator, s engine.EpochSlice, order *cluster.EpochOrder, parts []memcat.Part, schema *arrow.Schema, target, part int64) (array.RecordReader, error) {
	r := &epochReader{ctx: ctx, tc: tc, buffers: buffers, slice: s, order: order, parts: parts, schema: schema, target: target, part: part, opened: map[int]openedPart{}, fixed: map[[2]int]fixedColumn{}}
	var bad error
	rd := s.Request.Reader
	order.Stretches(rd, s.From, s.To, func(t0, t1 int64, w int, g int64) bool {
		p := order.Windows()[w].Partition
		if !parts[p].Held() || parts[p].Rows != s.PartRows[p] {
			bad = errs.Unavailablef("partition %d of dataset %q is not held by this data node; plan the read again", p, s.Dataset)
			return false
		}
		batchEnd := rd.BatchSize > 0 && (t1-rd.Offset)%int64(rd.BatchSize) == 0
		r.pieces = append(r.pieces, epochPiece{window: w, g0: g, g1: g + t1 - t0, batchEnd: batchEnd})
		return true
	})
	if bad != nil {
		return nil, bad
	}
	return stream.Pull(ctx, schema, r.next, r.close), nil
}

// close frees what the reader holds; the stream runs it once, at its end or final Release.
func (r *epochReader) close() {
	r.tc.Cache.Release()
	releaseColumns(r.gathered)
	r.gathered = nil
	r.dropWindow()
	for _, o := range r.opened {
		o.release()
	}
	r.opened, r.fixed = nil, nil
}

// partBatches returns partition p's batches, opening it on first use.
func (r *epochReader) partBatches(p int) ([]arrow.RecordBatch, error) {
	if o, ok := r.opened[p]; ok {
		return o.batches, nil
	}
	batches, release, err := r.parts[p].Open(r.ctx)
	if err != nil {
		return nil, fmt.Errorf("partition %d of dataset %q: %w", p, r.slice.Dataset, err)
	}
	r.opened[p] = openedPart{batches: batches, release: release}
	return batches, nil
}

func (r *epochReader) dropWindow() {
	if r.win != nil {
		releaseColumns(r.win.fallback)
		r.win = nil
	}
}

// next returns the next batch of the part gathered last, gathering the next part (of this
// window or the next) first when that one is all sent; nil at the end. The stream checks the
// context before each call.
func (r *epochReader) next() (arrow.RecordBatch, error) {
	if r.sent == r.rows {
		releaseColumns(r.gathered)
		r.gathered = nil
		if r.win == nil || r.win.next == int64(len(r.win.idx)) {
			r.dropWindow()
			if len(r.pieces) == 0 {
				return nil, nil
			}
			if err := r.loadWindow(); err != nil {
				return nil, err
			}
		}
		if err := r.gatherPart(); err != nil {
			return nil, err
		}
	}
	n := r.win.cut(r.at+r.sent, min(r.target, r.rows-r.sent))
	cols := make([]arrow.Array, len(r.gathered))
	for i, a := range r.gathered {
		cols[i] = array.NewSlice(a, r.sent, r.sent+n)
	}
	b := array.NewRecordBatch(r.schema, cols, n)
	releaseColumns(cols)
	r.sent += n
	return b, nil
}

// cut returns how many of the window's rows from position from of the reading order to take,
// limit at most: all of them when they reach the window's end, else up to the last of the
// reader's batch ends within reach, when there is one. So a client cutting the stream into its
// batches slices whole ones out of record batches, and copies rows together only for a batch
// that a window boundary splits.
func (w *epochWindow) cut(from, limit int64) int64 {
	if from+limit >= int64(len(w.idx)) {
		return int64(len(w.idx)) - from
	}
	i := sort.Search(len(w.batchEnds), func(i int) bool { return w.batchEnds[i] > from+limit })
	if i > 0 && w.batchEnds[i-1] > from {
		return w.batchEnds[i-1] - from
	}
	return limit
}

// loadWindow takes the leading pieces that lie in one window as the window to read.
func (r *epochReader) loadWindow() error {
	w := r.pieces[0].window
	desc := r.order.Windows()[w]
	chunks, perm := r.order.Gather(w)
	batches, err := r.partBatches(desc.Partition)
	if err != nil {
		return err
	}
	stretches, rows, err := stretchesOf(batches, chunks)
	if err != nil {
		return err
	}
	win := &epochWindow{part: desc.Partition, batches: batches, stretches: stretches, rows: rows, fallback: make([]arrow.Array, len(r.slice.Columns))}
	for len(r.pieces) > 0 && r.pieces[0].window == w {
		p := r.pieces[0]
		for g := p.g0; g < p.g1; g++ {
			i := int32(g - desc.Start)
			if perm != nil {
				i = perm[i]
			}
			win.idx = append(win.idx, i)
		}
		if p.batchEnd {
			win.batchEnds = append(win.batchEnds, int64(len(win.idx)))
		}
		r.pieces = r.pieces[1:]
	}
	r.win = win
	return nil
}

// gatherPart gathers the window's next part.
func (r *epochReader) gatherPart() error {
	w := r.win
	n := w.cut(w.next, r.part)
	idx := w.idx[w.next : w.next+n]
	r.gathered = make([]arrow.Array, len(r.slice.Columns))
	for i, c := range r.slice.Columns {
		a, err := r.gatherColumn(i, c, idx)
		if err != nil {
			return err
		}
		r.gathered[i] = a
	}
	r.at, r.rows, r.sent = w.next, n, 0
	w.next += n
	return nil
}

// wideRowBytes is the row width from which a column is picked straight from the batches.
const wideRowBytes = 64

// gatherColumn returns the rows idx (window row numbers) of column col, the i-th read.
func (r *epochReader) gatherColumn(i, col int, idx []int32) (arrow.Array, error) {
	w := r.win
	dt := r.schema.Field(i).Type
	width := exec.FixedRowWidth(dt)
	fixed, seen := r.fixed[[2]int{w.part, col}]
	if !seen {
		fixed = fixedColumn{sources: make([][]byte, len(w.batches)), ok: true}
		for b, batch := range w.batches {
			if fixed.sources[b], fixed.ok = exec.FixedRowBytes(batch.Column(col)); !fixed.ok {
				break
			}
		}
		r.fixed[[2]int{w.part, col}] = fixed
	}
	if !fixed.ok {
		return r.concatAndTake(i, col, idx)
	}
	sources := fixed.sources
	if width >= wideRowBytes {
		if w.refs == nil {
			w.refs = locateRows(w.stretches, w.rows)
		}
		picked := make([]exec.RowRef, len(idx))
		for k, j := range idx {
			picked[k] = w.refs[j]
		}
		return exec.TakeFixedRowRefs(r.buffers, dt, sources, picked), nil
	}
	size := int(w.rows) * width
	r.scratch = slices.Grow(r.scratch[:0], size)[:size]
	at := 0
	for _, st := range w.stretches {
		at += copy(r.scratch[at:], sources[st.batch][int(st.from)*width:int(st.to)*width])
	}
	return exec.TakeFixedRows(r.buffers, dt, r.scratch, idx), nil
}

// concatAndTake is gatherColumn for any column: the window's rows concatenated (once per
// window), then taken.
func (r *epochReader) concatAndTake(i, col int, idx []int32) (arrow.Array, error) {
	w := r.win
	if w.fallback[i] == nil {
		rows, err := concatStretches(r.tc, w.batches, col, r.schema.Field(i).Type, w.stretches)
		if err != nil {
			return nil, err
		}
		w.fallback[i] = rows
	}
	return exec.TakeArrayRows(r.ctx, r.tc, w.fallback[i], idx)
}

// rowStretch is rows [from, to) of one of a partition's batches.
type rowStretch struct {
	batch    int
	from, to int64
}

// stretchesOf cuts row ranges (partition row numbers, in order) of a partition held in batches
// into runs that each lie in one batch; it also returns their rows in all.
func stretchesOf(batches []arrow.RecordBatch, ranges []cluster.RowRange) ([]rowStretch, int64, error) {
	// starts[b] is the partition row number of batch b's first row; the last is the row count.
	starts := make([]int64, len(batches)+1)
	for i, b := range batches {
		starts[i+1] = starts[i] + b.NumRows()
	}
	var out []rowStretch
	var rows int64
	for _, rg := range ranges {
		for from := rg.From; from < rg.To; {
			b := sort.Search(len(batches), func(i int) bool { return starts[i+1] > from })
			if b == len(batches) {
				return nil, 0, errs.Internalf("row %d is past the partition's %d rows", from, starts[len(batches)])
			}
			to := min(rg.To, starts[b+1])
			out = append(out, rowStretch{batch: b, from: from - starts[b], to: to - starts[b]})
			rows += to - from
			from = to
		}
	}
	return out, rows, nil
}

// locateRows returns where each of the rows of stretches is: its batch and row there.
func locateRows(stretches []rowStretch, rows int64) []exec.RowRef {
	refs := make([]exec.RowRef, 0, rows)
	for _, st := range stretches {
		for row := st.from; row < st.to; row++ {
			refs = append(refs, exec.RowRef{Batch: int32(st.batch), Row: int32(row)})
		}
	}
	return refs
}

// concatStretches concatenates the stretches of column col of a partition's batches into one
// array of type t.
func concatStretches(tc *exec.TaskContext, batches []arrow.RecordBatch, col int, t arrow.DataType, stretches []rowStretch) (arrow.Array, error) {
	if len(stretches) == 0 {
		return array.MakeArrayOfNull(tc.Alloc, t, 0), nil
	}
	pieces := make([]arrow.Array, len(stretches))
	defer releaseColumns(pieces)
	for i, st := range stretches {
		pieces[i] = array.NewSlice(batches[st.batch].Column(col), st.from, st.to)
	}
	a, err := array.Concatenate(pieces, tc.Alloc)
	if err != nil {
		return nil, errs.Internalf("gathering a window: %v", err)
	}
	return a, nil
}
