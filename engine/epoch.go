package engine

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
	"github.com/cachedb/cachedb/sql"
)

// Training reads: one reader's share of one epoch of a dataset, in the epoch's shuffled order
// (cluster.EpochOrder, cluster.EpochReader). The head plans a read into segments, each a
// stretch of the reader's share whose rows one data node holds; the node that holds them
// produces a segment from memory (ReadEpoch).

// EpochRequest is what a training read asks for besides the columns.
type EpochRequest struct {
	Seed    uint64
	Epoch   int64
	Shuffle bool
	// ChunkRows and WindowRows size the shuffle (cluster.EpochOrder).
	ChunkRows, WindowRows int
	// Generation, when not 0, is the dataset generation the job reads: a read of a dataset made
	// again since (another generation under the name) is refused instead of reading other rows.
	Generation uint64
	Reader     cluster.EpochReader
}

// DefaultEpochRequest is a lone reader of epoch 0, shuffled with seed 0.
func DefaultEpochRequest() EpochRequest {
	return EpochRequest{
		Shuffle: true, ChunkRows: cluster.DefaultChunkRows, WindowRows: cluster.DefaultWindowRows,
		Reader: cluster.EpochReader{WorldSize: 1, NumWorkers: 1},
	}
}

// EpochOptionNames lists the options a training read takes, as ParseEpochOptions reads them.
var EpochOptionNames = []string{"seed", "epoch", "shuffle", "chunk_rows", "window_rows", "rank", "world_size", "worker", "num_workers", "batch_size", "offset", "start", "shares", "generation"}

// ParseEpochOptions reads a training read's options (names as in EpochOptionNames, values as
// text) over DefaultEpochRequest. An unknown name or a value that is not a number of the
// option's kind is errs.InvalidInput naming it; numbers out of range are refused by
// EpochReader.Validate (here) and cluster.NewEpochOrder (when planned).
func ParseEpochOptions(opts map[string]string) (EpochRequest, error) {
	req := DefaultEpochRequest()
	for _, name := range slices.Sorted(maps.Keys(opts)) {
		value := strings.TrimSpace(opts[name])
		var err error
		count := func(dst *int) {
			var v int64
			v, err = strconv.ParseInt(value, 10, 32)
			*dst = int(v)
		}
		switch name {
		case "seed":
			req.Seed, err = strconv.ParseUint(value, 10, 64)
		case "epoch":
			req.Epoch, err = strconv.ParseInt(value, 10, 64)
		case "shuffle":
			req.Shuffle, err = strconv.ParseBool(value)
		case "chunk_rows":
			count(&req.ChunkRows)
		case "window_rows":
			count(&req.WindowRows)
		case "rank":
			count(&req.Reader.Rank)
		case "world_size":
			count(&req.Reader.WorldSize)
		case "worker":
			count(&req.Reader.Worker)
		case "num_workers":
			count(&req.Reader.NumWorkers)
		case "batch_size":
			count(&req.Reader.BatchSize)
		case "offset":
			req.Reader.Offset, err = strconv.ParseInt(value, 10, 64)
		case "start":
			req.Reader.Start, err = strconv.ParseInt(value, 10, 64)
		case "generation":
			req.Generation, err = strconv.ParseUint(value, 10, 64)
		case "shares":
			req.Reader.Shares, err = cluster.ParseShareMode(strings.ToLower(value))
		default:
			return req, errs.Invalidf("unknown training read option %q; the options are %s", name, strings.Join(EpochOptionNames, ", "))
		}
		if err != nil {
			return req, errs.Invalidf("training read option %s=%q: %v", name, value, err)
		}
	}
	return req, req.Reader.Validate()
}

// TrainingHint returns the options of a query's /*+ TRAINING(...) */ hint (nil when it has
// none).
func TrainingHint(sqlText string) (map[string]string, error) {
	return sql.TrainingHint(sqlText)
}

// EpochSlice is one segment of a training read: everything a data node needs to produce it.
type EpochSlice struct {
	Dataset    string
	Generation uint64
	// Columns index the dataset's schema; Names are their output names.
	Columns []int
	Names   []string
	// PartRows are the dataset's partition row counts, from which the node computes the order.
	PartRows []int64
	Request  EpochRequest
	// From and To bound the segment in the rank's share: the reader's positions in [From, To).
	From, To int64
}

// EpochPlan is a training read planned by the head.
type EpochPlan struct {
	Schema *arrow.Schema
	// Rows is how many rows the reader gets.
	Rows int64
	// Segments, read in order, give the reader's rows in order; Locations[i] is the data node
	// holding segment i's rows.
	Segments  []EpochSlice
	Locations []string
}

// PlanEpochRead plans a training read of sqlText, which must select columns of one dataset
// (no WHERE, grouping, ordering or LIMIT: those belong in the dataset's definition).
func (e *Engine) PlanEpochRead(ctx context.Context, sqlText string, req EpochRequest) (*EpochPlan, error) {
	if err := req.Reader.Validate(); err != nil {
		return nil, err
	}
	d, cols, names, err := e.epochSource(ctx, sqlText)
	if err != nil {
		return nil, err
	}
	if req.Generation != 0 && req.Generation != d.Generation() {
		return nil, errs.NotFoundf("dataset %q generation %d is no longer held: it was made again (now generation %d); start the job again to read the new one", d.Name(), req.Generation, d.Generation())
	}
	parts := d.Parts()
	partRows := make([]int64, len(parts))
	for i, p := range parts {
		if p.Location == "" && !p.Held() {
			return nil, errs.Unavailablef("partition %d of dataset %q is being made again after a data node was lost; try again shortly", i, d.Name())
		}
		partRows[i] = p.Rows
	}
	order, err := cluster.NewEpochOrder(partRows, req.Seed, req.Epoch, req.Shuffle, req.ChunkRows, req.WindowRows)
	if err != nil {
		return nil, err
	}
	plan := &EpochPlan{Schema: epochSchema(d.Schema(), cols, names)}
	// The slice names its generation itself; the request's pin was checked here.
	req.Generation = 0
	base := EpochSlice{Dataset: d.Name(), Generation: d.Generation(), Columns: cols, Names: names, PartRows: partRows, Request: req}
	order.Stretches(req.Reader, 0, order.Rows(), func(t0, t1 int64, w int, _ int64) bool {
		plan.Rows += t1 - t0
		loc := parts[order.Windows()[w].Partition].Location
		if n := len(plan.Segments); n > 0 && plan.Locations[n-1] == loc {
			plan.Segments[n-1].To = t1
		} else {
			seg := base
			seg.From, seg.To = t0, t1
			plan.Segments = append(plan.Segments, seg)
			plan.Locations = append(plan.Locations, loc)
		}
		return true
	})
	return plan, nil
}

// epochSource binds sqlText and returns the dataset it reads and the columns it selects.
func (e *Engine) epochSource(ctx context.Context, sqlText string) (*memcat.Dataset, []int, []string, error) {
	tables, err := e.tablesFor(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	stmt, err := sql.Bind(ctx, sqlText, tables, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	q, ok := stmt.(*planner.Query)
	if !ok || q.NumParams > 0 {
		return nil, nil, nil, errs.Invalidf("a training read is a SELECT of columns of one dataset, without placeholders")
	}
	notPlain := errs.Invalidf("a training read selects columns of one dataset as they are (SELECT a, b FROM dataset): filters, expressions, grouping, ordering and LIMIT belong in the dataset's definition")
	plan := planner.Optimize(q.Plan)
	var refs []planner.Expr
	if p, ok := plan.(*planner.Project); ok {
		refs, plan = p.Exprs, p.Input
	}
	scan, ok := plan.(*planner.Scan)
	if !ok || len(scan.Filters) > 0 || scan.Limit > 0 {
		return nil, nil, nil, notPlain
	}
	d, ok := scan.Table.(*memcat.Dataset)
	if !ok {
		return nil, nil, nil, errs.Invalidf("%q is not a dataset: training reads read datasets held by data nodes (make one with `cachedb load` or CREATE TABLE … AS SELECT on a server with data nodes)", scan.Name)
	}
	out := planner.OutputSchema(q.Plan)
	if refs == nil {
		return d, append([]int(nil), scan.Indices...), fieldNames(out), nil
	}
	cols := make([]int, len(refs))
	for i, r := range refs {
		ref, ok := r.(*planner.ColumnRef)
		if !ok {
			return nil, nil, nil, notPlain
		}
		at := -1
		for j, c := range scan.Columns {
			if c.ID == ref.ID {
				at = j
			}
		}
		if at < 0 {
			return nil, nil, nil, notPlain
		}
		cols[i] = scan.Indices[at]
	}
	return d, cols, fieldNames(out), nil
}

func fieldNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return names
}

// epochSchema is the dataset's columns cols under the output names.
func epochSchema(ds *arrow.Schema, cols []int, names []string) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = ds.Field(c)
		fields[i].Name = names[i]
	}
	return arrow.NewSchema(fields, nil)
}

// epochBatchBytes is the size a segment's output batches aim at (the server splits anything
// larger than its cap).
const epochBatchBytes = 2 << 20

// ReadEpoch produces one segment of a training read from the partitions this process holds.
// A partition it does not hold, or one whose row count differs from the head's, fails with
// errs.Unavailable: the reader should plan again.
func (e *Engine) ReadEpoch(ctx context.Context, s EpochSlice) (array.RecordReader, error) {
	t, err := e.catalog.Table(ctx, s.Dataset+"@"+strconv.FormatUint(s.Generation, 10))
	if err != nil {
		return nil, err
	}
	d, ok := t.(*memcat.Dataset)
	if !ok {
		return nil, errs.NotFoundf("%q is not a dataset", s.Dataset)
	}
	if len(s.Columns) != len(s.Names) {
		return nil, errs.Invalidf("training read slice has %d columns and %d names", len(s.Columns), len(s.Names))
	}
	for _, c := range s.Columns {
		if c < 0 || c >= d.Schema().NumFields() {
			return nil, errs.Invalidf("dataset %q has no column %d", s.Dataset, c)
		}
	}
	if err := s.Request.Reader.Validate(); err != nil {
		return nil, err
	}
	order, err := cluster.NewEpochOrder(s.PartRows, s.Request.Seed, s.Request.Epoch, s.Request.Shuffle, s.Request.ChunkRows, s.Request.WindowRows)
	if err != nil {
		return nil, err
	}
	parts := d.Parts()
	if len(parts) != len(s.PartRows) {
		return nil, errs.Invalidf("dataset %q has %d partitions, the read expects %d", s.Dataset, len(parts), len(s.PartRows))
	}
	schema := epochSchema(d.Schema(), s.Columns, s.Names)
	var rowBytes int64 = 1
	if rows, bytes := d.Totals(); rows > 0 {
		rowBytes = max(1, bytes/rows*int64(len(s.Columns))/int64(max(1, d.Schema().NumFields())))
	}
	target := max(int64(1), epochBatchBytes/rowBytes)
	if b := int64(s.Request.Reader.BatchSize); b > 0 {
		target = max(b, target/b*b)
	}
	return newEpochReader(ctx, e.taskContext(nil), e.epochBuffers, s, order, parts, schema, target)
}

// epochReader streams a segment: for each run of the reader's stretches that lies in one
// window it gathers those rows of the window, one column at a time, then streams them in
// batches of up to target rows.
//
// A column at a time over a whole window keeps the gather in cache: the window's rows of one
// column are first copied together (their chunks are runs of consecutive rows), then picked in
// the shuffled order from that copy. Gathering per output batch instead, every batch would
// touch all columns of the whole window again.
type epochReader struct {
	ctx    context.Context
	tc     *exec.TaskContext
	slice  EpochSlice
	order  *cluster.EpochOrder
	parts  []memcat.Part
	schema *arrow.Schema
	target int64

	// pieces are the (window, epoch position range) stretches still to read.
	pieces []epochPiece
	// gathered holds the reader's rows of the window read last, per column, in reading order:
	// rows of them, sent of which are streamed already. batchEnds are the row counts of
	// gathered at which one of the reader's batches ends, in increasing order.
	gathered   []arrow.Array
	rows, sent int64
	batchEnds  []int64
	// scratch holds one column of a window's rows while they are gathered; buffers allocates
	// the gathered columns.
	scratch []byte
	buffers memory.Allocator

	cur arrow.RecordBatch
	err error
}

type epochPiece struct {
	window int
	g0, g1 int64
	// batchEnd is set when the piece ends one of the reader's batches.
	batchEnd bool
}

// newEpochReader reads segment s from the partitions parts in batches of up to target rows;
// buffers allocates the gathered columns (every byte of which it writes).
func newEpochReader(ctx context.Context, tc *exec.TaskContext, buffers memory.Allocator, s EpochSlice, order *cluster.EpochOrder, parts []memcat.Part, schema *arrow.Schema, target int64) (*epochReader, error) {
	r := &epochReader{ctx: ctx, tc: tc, buffers: buffers, slice: s, order: order, parts: parts, schema: schema, target: target}
	var bad error
	order.Stretches(s.Request.Reader, s.From, s.To, func(t0, t1 int64, w int, g int64) bool {
		p := order.Windows()[w].Partition
		if !parts[p].Held() || parts[p].Rows != s.PartRows[p] {
			bad = errs.Unavailablef("partition %d of dataset %q is not held by this data node; plan the read again", p, s.Dataset)
			return false
		}
		rd := s.Request.Reader
		batchEnd := rd.BatchSize > 0 && (t1-rd.Offset)%int64(rd.BatchSize) == 0
		r.pieces = append(r.pieces, epochPiece{window: w, g0: g, g1: g + t1 - t0, batchEnd: batchEnd})
		return true
	})
	if bad != nil {
		return nil, bad
	}
	return r, nil
}

func (r *epochReader) Schema() *arrow.Schema          { return r.schema }
func (r *epochReader) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *epochReader) Record() arrow.RecordBatch      { return r.cur }
func (r *epochReader) Err() error                     { return r.err }
func (r *epochReader) Retain()                        {}

func (r *epochReader) Release() {
	if r.tc != nil {
		r.tc.Cache.Release()
		r.tc = nil
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	releaseColumns(r.gathered)
	r.gathered = nil
}

// Next streams the next batch: up to target rows of the window gathered last, gathering the
// next window first when those are all sent.
func (r *epochReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil {
		return false
	}
	if r.sent == r.rows {
		releaseColumns(r.gathered)
		r.gathered = nil
		if len(r.pieces) == 0 {
			return false
		}
		if err := r.ctx.Err(); err != nil {
			r.err = err
			return false
		}
		if err := r.gatherWindow(); err != nil {
			r.err = err
			return false
		}
	}
	n := r.batchRows()
	cols := make([]arrow.Array, len(r.gathered))
	for i, a := range r.gathered {
		cols[i] = array.NewSlice(a, r.sent, r.sent+n)
	}
	r.cur = array.NewRecordBatch(r.schema, cols, n)
	releaseColumns(cols)
	r.sent += n
	return true
}

// batchRows is how many rows the next batch streams: up to target, ending where one of the
// reader's batches ends when one does within reach. Then a client that cuts the stream into
// its batches slices whole ones out of a record batch instead of copying pieces together.
func (r *epochReader) batchRows() int64 {
	n := min(r.target, r.rows-r.sent)
	if r.sent+n == r.rows { // the window's last rows
		return n
	}
	for len(r.batchEnds) > 0 && r.batchEnds[0] <= r.sent {
		r.batchEnds = r.batchEnds[1:]
	}
	cut := int64(0)
	for _, end := range r.batchEnds {
		if end > r.sent+n {
			break
		}
		cut = end - r.sent
	}
	if cut == 0 {
		return n
	}
	return cut
}

// gatherWindow gathers the rows of the leading pieces that lie in one window, in reading order.
func (r *epochReader) gatherWindow() error {
	w := r.pieces[0].window
	win := r.order.Windows()[w]
	chunks, perm := r.order.Gather(w)
	var idx []int32 // window row numbers, in reading order
	contiguous := true
	r.batchEnds = r.batchEnds[:0]
	for len(r.pieces) > 0 && r.pieces[0].window == w {
		p := r.pieces[0]
		for g := p.g0; g < p.g1; g++ {
			i := int32(g - win.Start)
			if perm != nil {
				i = perm[i]
			}
			contiguous = contiguous && (len(idx) == 0 || i == idx[len(idx)-1]+1)
			idx = append(idx, i)
		}
		if p.batchEnd {
			r.batchEnds = append(r.batchEnds, int64(len(idx)))
		}
		r.pieces = r.pieces[1:]
	}
	part := r.parts[win.Partition]
	r.gathered, r.rows, r.sent = make([]arrow.Array, len(r.slice.Columns)), int64(len(idx)), 0
	for i, c := range r.slice.Columns {
		a, err := r.gatherColumn(part.Batches, c, r.schema.Field(i).Type, chunks, idx, contiguous)
		if err != nil {
			return err
		}
		r.gathered[i] = a
	}
	return nil
}

// gatherColumn returns the rows idx (window row numbers; contiguous when they are consecutive
// and ascending) of column col of a window whose rows are the chunks of a partition's batches.
// Fixed-size rows without NULLs are copied together as bytes into the reader's scratch and
// picked from there; other columns are concatenated and taken.
func (r *epochReader) gatherColumn(batches []arrow.RecordBatch, col int, dt arrow.DataType, chunks []cluster.RowRange, idx []int32, contiguous bool) (arrow.Array, error) {
	width := exec.FixedRowWidth(dt)
	sources := make([][]byte, len(batches))
	for b, batch := range batches {
		rows, ok := exec.FixedRowBytes(batch.Column(col))
		if !ok {
			return r.concatAndTake(batches, col, dt, chunks, idx, contiguous)
		}
		sources[b] = rows
	}
	var n int64
	for _, c := range chunks {
		n += c.To - c.From
	}
	var values *memory.Buffer
	var window []byte
	if contiguous { // the result is a slice of the copied rows: they need their own buffer
		values = memory.NewResizableBuffer(r.tc.Alloc)
		defer values.Release()
		values.Resize(int(n) * width)
		window = values.Bytes()
	} else {
		r.scratch = slices.Grow(r.scratch[:0], int(n)*width)[:int(n)*width]
		window = r.scratch
	}
	at := 0
	if err := forEachStretch(batches, chunks, func(b int, from, to int64) {
		at += copy(window[at:], sources[b][int(from)*width:int(to)*width])
	}); err != nil {
		return nil, err
	}
	if !contiguous {
		return exec.TakeFixedRows(r.buffers, dt, window, idx), nil
	}
	rows := exec.NewFixedRows(dt, values, int(n))
	defer rows.Release()
	return array.NewSlice(rows, int64(idx[0]), int64(idx[len(idx)-1])+1), nil
}

// concatAndTake is gatherColumn for any column: the window's rows concatenated, then taken.
func (r *epochReader) concatAndTake(batches []arrow.RecordBatch, col int, dt arrow.DataType, chunks []cluster.RowRange, idx []int32, contiguous bool) (arrow.Array, error) {
	rows, err := concatRanges(r.tc, batches, col, dt, chunks)
	if err != nil {
		return nil, err
	}
	defer rows.Release()
	if contiguous {
		return array.NewSlice(rows, int64(idx[0]), int64(idx[len(idx)-1])+1), nil
	}
	return exec.TakeArrayRows(r.ctx, r.tc, rows, idx)
}

// batchStarts returns the partition row number of each batch's first row, and the row count
// last.
func batchStarts(batches []arrow.RecordBatch) []int64 {
	starts := make([]int64, len(batches)+1)
	for i, b := range batches {
		starts[i+1] = starts[i] + b.NumRows()
	}
	return starts
}

// forEachStretch calls fn for each maximal run of the row ranges (partition row numbers, in
// order) that lies in one batch: batch b, its rows [from, to).
func forEachStretch(batches []arrow.RecordBatch, ranges []cluster.RowRange, fn func(b int, from, to int64)) error {
	starts := batchStarts(batches)
	for _, rg := range ranges {
		for from := rg.From; from < rg.To; {
			b := sort.Search(len(batches), func(i int) bool { return starts[i+1] > from })
			if b == len(batches) {
				return errs.Internalf("row %d is past the partition's %d rows", from, starts[len(batches)])
			}
			to := min(rg.To, starts[b+1])
			fn(b, from-starts[b], to-starts[b])
			from = to
		}
	}
	return nil
}

// concatRanges concatenates the row ranges (partition row numbers, in order) of column col of a
// partition's batches into one array of type t.
func concatRanges(tc *exec.TaskContext, batches []arrow.RecordBatch, col int, t arrow.DataType, ranges []cluster.RowRange) (arrow.Array, error) {
	var pieces []arrow.Array
	defer func() {
		for _, a := range pieces {
			a.Release()
		}
	}()
	if err := forEachStretch(batches, ranges, func(b int, from, to int64) {
		pieces = append(pieces, array.NewSlice(batches[b].Column(col), from, to))
	}); err != nil {
		return nil, err
	}
	if len(pieces) == 0 {
		return array.MakeArrayOfNull(tc.Alloc, t, 0), nil
	}
	a, err := array.Concatenate(pieces, tc.Alloc)
	if err != nil {
		return nil, errs.Internalf("gathering a window: %v", err)
	}
	return a, nil
}
