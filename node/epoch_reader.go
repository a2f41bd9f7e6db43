package node

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
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
	"github.com/cachedb/cachedb/internal/safe"
	"github.com/cachedb/cachedb/internal/stream"
)

// epochReader gathers the batches of a segment of a training read, which newEpochReader
// streams (stream.Pull): the runs of the reader's rows in [From, To) (cluster.EpochOrder
// Stretches) whose partitions the segment names, in the reader's order. It gathers them in
// parts of at most part rows (so that wide rows do not hold much at once), one column at a time,
// then hands them out in record batches of up to target rows, each with its runs (AppMetadata).
// Parts are gathered one ahead, by a goroutine of their own (produce), while the stream sends
// the part before: a node's gathering and sending overlap instead of taking turns.
//
// A run is rows of one window of one partition. For each partition the reader keeps the window
// it reads (where each of its rows lies in the partition's batches, and its permutation), so a
// row is located with two lookups. A column whose rows have a fixed size in every batch is
// picked straight from the partitions' batches (exec.TakeFixedRowRefs): a window's rows lie in
// a few hundred chunks of consecutive rows, so what a part picks stays in cache. Other layouts
// (strings, booleans, NULLs) are concatenated once per window and taken.
type epochReader struct {
	ctx    context.Context
	tc     *exec.TaskContext
	slice  engine.EpochSlice
	order  *cluster.EpochOrder
	parts  []memcat.Part
	schema *arrow.Schema
	// target and part bound a batch and a gathered part, in rows.
	target, part int64
	// serves says which partitions the segment reads (all when the slice names none).
	serves []bool

	// next is the first share position of [From, To) not yet cut into runs; u counts the
	// reader's rows before it (the reader's own numbering of its rows, from From on).
	nextT, u int64
	// runs are the runs cut and not yet gathered, in order.
	runs []epochRun

	// cur is the part being sent, sent rows of which are streamed already; the current batch is
	// its rows [batchAt, sent), and meta describes them.
	cur           *gatheredPart
	batchAt, sent int64
	// ahead hands gathered parts from produce to next, and is closed when produce ends; stop
	// tells produce to end. Both are made on the first call of next.
	ahead chan partResult
	stop  chan struct{}
	// The part's rows are, run after run of picks, dealt rows picked of the window
	// partWindows[Source] (each window the part reads, once).
	picks       []int32
	pickRuns    []exec.SourceRun
	partWindows []*partWindow
	// spare are column copies of windows read before (partWindow.narrow), for the next;
	// spareBytes counts their capacity.
	spare      [][]byte
	spareBytes int
	meta       []byte
	buffers    memory.Allocator
	// opened are the batches of the partitions read so far (memcat.Part.Open, from whatever
	// tier holds them), kept until the reader closes: batches of them in all; base[p] numbers
	// partition p's first batch among them (-1: not opened). sources[i] holds, for read column i, every
	// opened batch's rows as fixed-size bytes (nil where a batch does not hold them so).
	opened  map[int]openedPart
	batches int
	base    []int
	sources [][][]byte
	fixedOK map[[2]int]bool
	// windows holds the window each partition is read in; retired, windows replaced while a
	// part was gathered, freed once it is.
	windows map[int]*partWindow
	retired []*partWindow
}

// gatheredPart is a part of the reader's rows, gathered: its rows per column, and its runs in
// order, run i at part row at[i].
type gatheredPart struct {
	cols []arrow.Array
	rows int64
	runs []epochRun
	at   []int64
}

type partResult struct {
	part *gatheredPart
	err  error
}

type openedPart struct {
	batches []arrow.RecordBatch
	release func()
}

// epochRun is rows [j, j+n) of partition part's sequence, the reader's rows [u, u+n).
type epochRun struct {
	part    int
	j, n, u int64
}

// partWindow is what a reader knows of the window of a partition it reads.
type partWindow struct {
	part, index int
	// stretches are the window's rows (in dealt order) in the partition's batches, rows of them;
	// perm its permutation (nil: none); refs where each of its rows lies (made for the first
	// wide column).
	stretches []rowStretch
	rows      int64
	perm      []int32
	refs      []exec.RowRef
	// narrow holds, per read column, the window's rows of a narrow fixed-size column copied
	// together (dealt order), made on first use.
	narrow [][]byte
	// fallback holds the window's rows (dealt order) of the columns without fixed-size rows,
	// made on first use.
	fallback []arrow.Array
}

// newEpochReader streams segment s from the partitions parts in batches of up to target rows,
// gathering at most part rows (a multiple of target) at once; buffers allocates the gathered
// columns (every byte of which it writes). The stream follows internal/stream's contract; when
// it ends or is released, what it gathered and tc's cache are freed. A partition of the segment
// not held, or held with another row count, is errs.Unavailable.
func newEpochReader(ctx context.Context, tc *exec.TaskContext, buffers memory.Allocator, s engine.EpochSlice, order *cluster.EpochOrder, parts []memcat.Part, schema *arrow.Schema, target, part int64) (*epochStream, error) {
	r := &epochReader{ctx: ctx, tc: tc, buffers: buffers, slice: s, order: order, parts: parts, schema: schema, target: target, part: part,
		serves: make([]bool, len(parts)), nextT: s.From, opened: map[int]openedPart{}, base: make([]int, len(parts)),
		sources: make([][][]byte, len(s.Columns)), fixedOK: map[[2]int]bool{}, windows: map[int]*partWindow{}}
	for p := range r.base {
		r.base[p] = -1
	}
	served := s.Partitions
	if len(served) == 0 {
		for p := range parts {
			served = append(served, p)
		}
	}
	for _, p := range served {
		if p < 0 || p >= len(parts) {
			return nil, errs.Invalidf("dataset %q has no partition %d", s.Dataset, p)
		}
		if !parts[p].Held() || parts[p].Rows != s.PartRows[p] {
			return nil, errs.Unavailablef("partition %d of dataset %q is not held by this data node; plan the read again", p, s.Dataset)
		}
		r.serves[p] = true
	}
	es := &epochStream{r: r}
	es.Reader = stream.Pull(ctx, schema, r.next, r.close)
	return es, nil
}

// epochStream is the reader's stream; AppMetadata is the runs of its current batch.
type epochStream struct {
	*stream.Reader
	r *epochReader
}

// AppMetadata describes the current batch's rows: for each run of them in order, the reader's
// row number of its first row and its row count, as little-endian int64 pairs. A client
// reading a read's segments from several nodes at once (EpochRequest.NodeStreams) places every
// row by it.
func (s *epochStream) AppMetadata() []byte { return s.r.meta }

// PieceMetadata is AppMetadata for the current batch's rows [from, to) alone, for a server
// that sends the batch in pieces.
func (s *epochStream) PieceMetadata(from, to int64) []byte {
	r := s.r
	if r.cur == nil {
		return nil
	}
	return r.cur.runsMeta(r.batchAt+from, r.batchAt+min(to, r.sent-r.batchAt))
}

// close frees what the reader holds; the stream runs it once, at its end or final Release. It
// first stops produce and waits for it to end (it ends after the part it is gathering).
func (r *epochReader) close() {
	if r.ahead != nil {
		close(r.stop)
		for res := range r.ahead {
			res.part.release()
		}
	}
	r.cur.release()
	r.cur = nil
	r.tc.Cache.Release()
	for _, w := range r.windows {
		releaseColumns(w.fallback)
	}
	r.freeRetired()
	for _, o := range r.opened {
		o.release()
	}
	r.opened, r.windows, r.sources = nil, nil, nil
}

func (r *epochReader) freeRetired() {
	for _, w := range r.retired {
		releaseColumns(w.fallback)
		for _, b := range w.narrow {
			if b != nil && r.spareBytes+cap(b) <= spareKept {
				r.spare = append(r.spare, b[:0])
				r.spareBytes += cap(b)
			}
		}
	}
	r.retired = nil
}

// spareKept bounds the bytes of the column copies a reader keeps for its next windows: every
// window a part leaves behind (a part of 2 MiB of rows moves on from about seven windows of the
// default 4,096 rows, each one copy per column), so that in the steady state no window's copy
// is allocated afresh.
const spareKept = 8 << 20

// takeSpare returns an empty slice with room for n bytes, a spare one when one is large enough
// (the most recently kept of those, likely still in cache).
func (r *epochReader) takeSpare(n int) []byte {
	for k := len(r.spare) - 1; k >= 0; k-- {
		if b := r.spare[k]; cap(b) >= n {
			r.spare = slices.Delete(r.spare, k, k+1)
			r.spareBytes -= cap(b)
			return b[:0]
		}
	}
	return make([]byte, 0, n)
}

// cutRuns cuts the reader's rows into runs until at least want rows of them wait or none are
// left.
func (r *epochReader) cutRuns(want int64) {
	const span = 1 << 16 // share positions cut at a time
	var waiting int64
	for _, run := range r.runs {
		waiting += run.n
	}
	rd := r.slice.Request.Reader
	for waiting < want && r.nextT < r.slice.To {
		to := min(r.slice.To, r.nextT+span)
		r.order.Stretches(rd, r.nextT, to, func(t0, t1 int64, p int, j int64) bool {
			n := t1 - t0
			if r.serves[p] {
				r.runs = append(r.runs, epochRun{part: p, j: j, n: n, u: r.u})
				waiting += n
			}
			r.u += n
			return true
		})
		r.nextT = to
	}
}

// next returns the next batch of the part being sent, taking the next part gathered when that
// one is all sent; nil at the end. The stream checks the context before each call.
func (r *epochReader) next() (arrow.RecordBatch, error) {
	if r.cur == nil || r.sent == r.cur.rows {
		r.cur.release()
		r.cur, r.sent, r.meta = nil, 0, nil
		if r.ahead == nil {
			r.ahead, r.stop = make(chan partResult), make(chan struct{})
			safe.Spawn("training read gather", r.produce, func(err error) {
				if err != nil {
					select {
					case r.ahead <- partResult{err: err}:
					case <-r.stop:
					}
				}
				close(r.ahead)
			})
		}
		select {
		case res, ok := <-r.ahead:
			if !ok {
				return nil, nil
			}
			if res.err != nil {
				return nil, res.err
			}
			r.cur = res.part
		case <-r.ctx.Done():
			return nil, stream.Stopped(r.ctx)
		}
	}
	n := min(r.target, r.cur.rows-r.sent)
	cols := make([]arrow.Array, len(r.cur.cols))
	for i, a := range r.cur.cols {
		cols[i] = array.NewSlice(a, r.sent, r.sent+n)
	}
	b := array.NewRecordBatch(r.schema, cols, n)
	releaseColumns(cols)
	r.meta = r.cur.runsMeta(r.sent, r.sent+n)
	r.batchAt = r.sent
	r.sent += n
	return b, nil
}

// produce gathers the segment's parts in order and hands each to next, until the runs end,
// gathering fails (its error is what it returns) or close stops it. It alone uses the reader's
// gathering state (runs, windows, opened partitions and the task context) until it ends.
//
// The first part is one of the reader's batches (target rows without a batch size), or only
// this segment's rows of the reader's first batch when there are any, and each next one twice
// the one before, up to part rows: the first batch leaves soon after the read begins (a client
// merging every node's stream waits for each node's rows of its first batch), and a short read
// costs no more than its rows.
func (r *epochReader) produce() error {
	size := min(r.target, r.part)
	until := int64(math.MaxInt64)
	if b := int64(r.slice.Request.Reader.BatchSize); b > 0 {
		size = min(b, size)
		until = b
	}
	for {
		r.cutRuns(size)
		if len(r.runs) == 0 {
			return nil
		}
		if r.runs[0].u >= until {
			until = math.MaxInt64 // the segment has no rows of the first batch
		}
		p, err := r.gatherPart(size, until)
		until = math.MaxInt64
		size = min(2*size, r.part)
		if err != nil {
			return err
		}
		select {
		case r.ahead <- partResult{part: p}:
		case <-r.stop:
			p.release()
			return nil
		}
	}
}

// release frees the part's columns; a nil part has none.
func (p *gatheredPart) release() {
	if p != nil {
		releaseColumns(p.cols)
	}
}

// runsMeta encodes the runs of the part's rows [from, to) (AppMetadata).
func (p *gatheredPart) runsMeta(from, to int64) []byte {
	i := sort.Search(len(p.at), func(i int) bool { return p.at[i]+p.runs[i].n > from })
	var out []byte
	for ; i < len(p.runs) && p.at[i] < to; i++ {
		lo, hi := max(from, p.at[i]), min(to, p.at[i]+p.runs[i].n)
		out = binary.LittleEndian.AppendUint64(out, uint64(p.runs[i].u+lo-p.at[i]))
		out = binary.LittleEndian.AppendUint64(out, uint64(hi-lo))
	}
	return out
}

// gatherPart takes the next runs, up to size rows and up to the reader's row until, as a part
// and gathers their rows.
func (r *epochReader) gatherPart(size, until int64) (*gatheredPart, error) {
	part := &gatheredPart{}
	var rows int64
	for len(r.runs) > 0 && rows < size && r.runs[0].u < until {
		run := r.runs[0]
		if take := min(size-rows, until-run.u); run.n > take {
			r.runs[0].j, r.runs[0].n, r.runs[0].u = run.j+take, run.n-take, run.u+take
			run.n = take
		} else {
			r.runs = r.runs[1:]
		}
		part.runs, part.at = append(part.runs, run), append(part.at, rows)
		rows += run.n
	}
	// Which window holds each row, at which dealt row.
	picks, runs, wins := r.picks[:0], r.pickRuns[:0], r.partWindows[:0]
	for _, run := range part.runs {
		w, i := r.order.Window(run.j)
		win, err := r.window(run.part, w)
		if err != nil {
			return nil, err
		}
		slot := slices.Index(wins, win)
		if slot < 0 {
			slot, wins = len(wins), append(wins, win)
		}
		runs = append(runs, exec.SourceRun{Source: int32(slot), N: int32(run.n)})
		if win.perm == nil {
			for d := i; d < i+run.n; d++ {
				picks = append(picks, int32(d))
			}
			continue
		}
		picks = append(picks, win.perm[i:i+run.n]...)
	}
	r.picks, r.pickRuns, r.partWindows = picks, runs, wins
	part.cols, part.rows = make([]arrow.Array, len(r.slice.Columns)), rows
	for i, c := range r.slice.Columns {
		a, err := r.gatherColumn(i, c)
		if err != nil {
			part.release()
			return nil, err
		}
		part.cols[i] = a
	}
	r.freeRetired()
	return part, nil
}

// window returns window w of partition p, made the one the reader keeps for p.
func (r *epochReader) window(p, w int) (*partWindow, error) {
	if win := r.windows[p]; win != nil && win.index == w {
		return win, nil
	}
	batches, err := r.partBatches(p)
	if err != nil {
		return nil, err
	}
	chunks, perm := r.order.Gather(p, w)
	stretches, rows, err := stretchesOf(batches, chunks)
	if err != nil {
		return nil, err
	}
	win := &partWindow{part: p, index: w, stretches: stretches, rows: rows, perm: perm,
		narrow: make([][]byte, len(r.slice.Columns)), fallback: make([]arrow.Array, len(r.slice.Columns))}
	if old := r.windows[p]; old != nil {
		r.retired = append(r.retired, old)
	}
	r.windows[p] = win
	return win, nil
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
	r.base[p] = r.batches
	r.batches += len(batches)
	for i, c := range r.slice.Columns {
		ok := true
		for _, b := range batches {
			rows, fixed := exec.FixedRowBytes(b.Column(c))
			ok = ok && fixed
			r.sources[i] = append(r.sources[i], rows)
		}
		r.fixedOK[[2]int{p, i}] = ok
	}
	return batches, nil
}

// wideRowBytes is the row width from which a column is picked straight from the batches.
const wideRowBytes = 64

// gatherColumn returns the part's rows of column col, the i-th read.
func (r *epochReader) gatherColumn(i, col int) (arrow.Array, error) {
	fixed := true
	for _, w := range r.partWindows {
		fixed = fixed && r.fixedOK[[2]int{w.part, i}]
	}
	dt := r.schema.Field(i).Type
	if width := exec.FixedRowWidth(dt); fixed && width >= wideRowBytes {
		// Each row is whole cache lines: picked where it lies.
		refs := make([]exec.RowRef, 0, len(r.picks))
		at := 0
		for _, run := range r.pickRuns {
			w := r.partWindows[run.Source]
			if w.refs == nil {
				w.refs = locateRows(w.stretches, w.rows)
			}
			base := int32(r.base[w.part])
			for _, d := range r.picks[at : at+int(run.N)] {
				ref := w.refs[d]
				ref.Batch += base
				refs = append(refs, ref)
			}
			at += int(run.N)
		}
		return exec.TakeFixedRowRefs(r.buffers, dt, r.sources[i], refs), nil
	} else if fixed {
		// Each window's rows copied together first (runs of consecutive rows: a sequential
		// copy), then picked from those copies, small enough to stay in cache.
		sources := make([][]byte, len(r.partWindows))
		for k, w := range r.partWindows {
			if w.narrow[i] == nil {
				w.narrow[i] = r.takeSpare(int(w.rows) * width)
				base := r.base[w.part]
				for _, st := range w.stretches {
					w.narrow[i] = append(w.narrow[i], r.sources[i][base+st.batch][int(st.from)*width:int(st.to)*width]...)
				}
			}
			sources[k] = w.narrow[i]
		}
		return exec.TakeFixedRowRuns(r.buffers, dt, sources, r.pickRuns, r.picks), nil
	}
	// The rows of the part's windows concatenated (each window's once, kept while the window is
	// read), then taken.
	pieces := make([]arrow.Array, len(r.partWindows))
	offsets := make([]int32, len(r.partWindows))
	var at int32
	for k, w := range r.partWindows {
		if w.fallback[i] == nil {
			batches, err := r.partBatches(w.part)
			if err != nil {
				return nil, err
			}
			if w.fallback[i], err = concatStretches(r.tc, batches, col, dt, w.stretches); err != nil {
				return nil, err
			}
		}
		pieces[k], offsets[k] = w.fallback[i], at
		at += int32(w.rows)
	}
	all := pieces[0]
	if len(pieces) > 1 {
		var err error
		if all, err = array.Concatenate(pieces, r.tc.Alloc); err != nil {
			return nil, errs.Internalf("gathering a training read: %v", err)
		}
		defer all.Release()
	}
	idx := make([]int32, 0, len(r.picks))
	k := 0
	for _, run := range r.pickRuns {
		for _, d := range r.picks[k : k+int(run.N)] {
			idx = append(idx, offsets[run.Source]+d)
		}
		k += int(run.N)
	}
	return exec.TakeArrayRows(r.ctx, r.tc, all, idx)
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
