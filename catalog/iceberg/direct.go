package iceberg

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg/fixedchunk"
	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/internal/stream"
)

// Direct reads. A task over a data file without delete files, whose row groups need no more
// pruning while reading (planning tested them against the filter with the file's footer, or the
// scan has no filter), and whose Parquet file records the field id of every selected column as a
// top-level primitive column of exactly the Arrow type the table's schema gives it, is read
// straight through arrow-go's Parquet reader instead of iceberg-go's. The rows, their order and
// the row groups read are the same (row groups are selected by range as iceberg-go does, see
// directRowGroups); what differs is how string and binary columns are decoded: a column whose
// pages in the row groups read are all dictionary-encoded is read as a dictionary (indices plus
// the distinct values) and expanded into plain values in one pass (expandDictionary), where
// iceberg-go's reader (which cannot ask for dictionaries) decodes every value through a builder.
// Fixed-width columns (integers, dates, timestamps, decimals stored as integers, floats) whose
// chunks fixedchunk.Supports are decoded by fixedchunk, straight from their pages, and so are
// the indices of the columns read as dictionaries (then expanded); both into buffers that a
// read the column cache does not keep recycles from batch to batch.
// Any task that does not qualify, or whose file does not, is read by iceberg-go as before.
// Direct reads are what the column cache (column_cache.go) keeps: the batches of each row group
// and column, cut at directBatchRows whichever columns a read asks for, so that a row group's
// cached and freshly read columns line up batch for batch.

// directBatchRows is the rows per batch of a direct read: iceberg-go's default batch size, so
// that batches look alike whichever reader made them.
const directBatchRows = 1 << 17

// directRecycledBytes bounds the freed column buffers a direct read that the column cache does
// not keep holds for its next batches (a few batches of several columns).
const directRecycledBytes = 16 << 20

// directRead is a planned direct read's column mapping for one file.
type directRead struct {
	leaves  []int            // Parquet leaf columns read, ascending
	fromCol []int            // per output column, its index among leaves
	dict    []bool           // per leaf: read as a dictionary, then expanded
	types   []arrow.DataType // per leaf: the Arrow type of its batches (dictionaries expanded)
}

// canReadDirect reports whether a task may be read directly, as far as planning can tell.
func canReadDirect(pt prunedTask, filtered bool, limit int64) bool {
	t := pt.task
	return limit == 0 && (pt.tested || !filtered) &&
		len(t.DeleteFiles) == 0 && len(t.EqualityDeleteFiles) == 0 && len(t.DeletionVectorFiles) == 0
}

// openDirect opens the task's direct read; nil without an error when the file does not qualify
// (the caller then reads the task through iceberg-go). With a column cache, the footer and the
// column chunks come from the cache where it has them, and the file is opened only for what it
// lacks.
func (s *scanTask) openDirect(ctx context.Context, mem memory.Allocator) (array.RecordReader, error) {
	st := s.state
	cache := st.table.cat.cfg.ColumnCache
	src := &directFile{task: s, ctx: ctx, mem: mem, cache: cache,
		key: fileKey{catalog: st.table.cat.cfg.Name, path: s.task.File.FilePath(), size: s.task.File.FileSizeBytes()}}
	if cache != nil {
		src.meta = cache.footer(src.key)
		if src.keep = !catalog.ReadOnce(ctx); src.keep {
			src.mem = cache.alloc()
		}
	}
	if src.meta == nil {
		if err := src.open(); err != nil {
			return nil, err
		}
		src.meta = src.pf.MetaData()
		if cache != nil {
			cache.putFooter(src.key, src.meta)
		}
	}
	meta := src.meta
	groups := directRowGroups(s.task, meta)
	plan, ok := st.directColumns(meta, groups)
	if !ok {
		src.close()
		return nil, nil
	}
	src.props = pqarrow.ArrowReadProperties{Parallel: true, BatchSize: directBatchRows}
	for i, leaf := range plan.leaves {
		src.props.SetReadDict(leaf, plan.dict[i])
	}
	manifest, err := pqarrow.NewSchemaManifest(meta.Schema, meta.KeyValueMetadata(), &src.props)
	if err != nil {
		src.close()
		return nil, err
	}
	// Every read column is top-level, so the reader's columns are the leaves' fields in file
	// order; check that each has the type the table expects before trusting the mapping.
	plan.types = make([]arrow.DataType, len(plan.leaves))
	for i, leaf := range plan.leaves {
		fi := fieldOfLeaf(manifest, leaf)
		if fi < 0 {
			src.close()
			return nil, nil
		}
		got := manifest.Fields[fi].Field.Type
		if plan.dict[i] {
			dt, isDict := got.(*arrow.DictionaryType)
			if !isDict {
				src.close()
				return nil, nil
			}
			got = dt.ValueType
		}
		for o, c := range plan.fromCol {
			if c == i && !arrow.TypeEqual(got, st.schema.Field(o).Type) {
				src.close()
				return nil, nil
			}
		}
		plan.types[i] = got
	}
	st.table.cat.directReads.Add(1)
	if len(groups) == 0 {
		src.close()
		return stream.Empty(st.schema), nil
	}
	r := &directReader{task: s, plan: plan, src: src, groups: groups}
	return stream.Pull(ctx, st.schema, r.pull, r.close), nil
}

// directFile is the data file of a direct read, opened when first needed: with a column cache
// holding its footer and every chunk read, never.
type directFile struct {
	task  *scanTask
	ctx   context.Context
	key   fileKey
	cache *ColumnCache // nil: none
	// keep says the chunks read go into the cache (not for a catalog.ReadOnce read).
	keep  bool
	mem   memory.Allocator
	meta  *metadata.FileMetaData
	props pqarrow.ArrowReadProperties
	pf    *file.Reader        // nil until opened
	fr    *pqarrow.FileReader // nil until reader() first runs
}

// open opens the file and reads its footer, unless src already holds the footer.
func (src *directFile) open() error {
	st := src.task.state
	fsys, err := st.readTbl.FS(src.ctx)
	if err != nil {
		return err
	}
	f, err := fsys.Open(src.key.path)
	if err != nil {
		return err
	}
	opts := []file.ReadOption{file.WithReadProps(parquet.NewReaderProperties(src.mem))}
	if src.meta != nil {
		opts = append(opts, file.WithMetadata(src.meta))
	}
	pf, err := file.NewParquetReader(f, opts...)
	if err != nil {
		_ = f.Close()
		return err
	}
	src.pf = pf
	return nil
}

// reader is the file's Arrow reader, opening the file first if need be.
func (src *directFile) reader() (*pqarrow.FileReader, error) {
	if src.fr != nil {
		return src.fr, nil
	}
	if src.pf == nil {
		if err := src.open(); err != nil {
			return nil, err
		}
	}
	fr, err := pqarrow.NewFileReader(src.pf, src.props, src.mem)
	if err != nil {
		return nil, err
	}
	src.fr = fr
	return fr, nil
}

func (src *directFile) close() {
	if src.pf != nil {
		_ = src.pf.Close()
		src.pf = nil
	}
}

// fieldOfLeaf is the index of the manifest's top-level field holding Parquet leaf column leaf.
func fieldOfLeaf(m *pqarrow.SchemaManifest, leaf int) int {
	for i, f := range m.Fields {
		if f.ColIndex == leaf {
			return i
		}
	}
	return -1
}

// directColumns maps the scan's output columns to top-level primitive Parquet columns by field
// id and picks the string and binary columns to read as dictionaries; false when some output
// column has no such column in the file (then iceberg-go reads it: it fills columns the file
// lacks, maps names and promotes types).
func (st *scanState) directColumns(meta *metadata.FileMetaData, groups []int) (directRead, bool) {
	sc := meta.Schema
	byID := map[int]int{}
	for i := 0; i < sc.NumColumns(); i++ {
		col := sc.Column(i)
		id := int(col.SchemaNode().FieldID())
		if id < 0 || len(col.ColumnPath()) != 1 || col.MaxRepetitionLevel() != 0 {
			continue
		}
		byID[id] = i
	}
	var plan directRead
	leafOf := make([]int, len(st.outNames))
	for o, name := range st.outNames {
		f, ok := st.table.pin.schema.FindFieldByName(name)
		if !ok {
			return plan, false
		}
		if _, prim := f.Type.(iceberg.PrimitiveType); !prim {
			return plan, false
		}
		leaf, ok := byID[f.ID]
		if !ok {
			return plan, false
		}
		leafOf[o] = leaf
		if !slices.Contains(plan.leaves, leaf) {
			plan.leaves = append(plan.leaves, leaf)
		}
	}
	slices.Sort(plan.leaves)
	plan.fromCol = make([]int, len(leafOf))
	for o, leaf := range leafOf {
		plan.fromCol[o] = slices.Index(plan.leaves, leaf)
	}
	plan.dict = make([]bool, len(plan.leaves))
	for i, leaf := range plan.leaves {
		plan.dict[i] = sc.Column(leaf).PhysicalType() == parquet.Types.ByteArray && allDictionaryPages(meta, leaf, groups)
	}
	return plan, len(plan.leaves) > 0
}

// allDictionaryPages reports whether every data page of column leaf in the row groups is
// dictionary-encoded, by the chunks' page encoding statistics; false when a chunk has none. A
// column that fell back to plain pages is better decoded plainly: read as a dictionary, its
// plain values would be hashed into one.
func allDictionaryPages(meta *metadata.FileMetaData, leaf int, groups []int) bool {
	for _, g := range groups {
		cc, err := meta.RowGroup(g).ColumnChunk(leaf)
		if err != nil {
			return false
		}
		stats := cc.EncodingStats()
		if len(stats) == 0 {
			return false
		}
		for _, s := range stats {
			if s.PageType == 0 /* DATA_PAGE */ || s.PageType == 3 /* DATA_PAGE_V2 */ {
				if s.Encoding != parquet.Encodings.RLEDict && s.Encoding != parquet.Encodings.PlainDict {
					return false
				}
			}
		}
	}
	return true
}

// directRowGroups are the row groups a task reads, selected as iceberg-go v0.7.0 selects them:
// every one for a task over the whole file, else those whose split offset (the data file's
// split offsets when they are valid, else the first page of the group's first column) lies in
// the task's byte range.
func directRowGroups(task table.FileScanTask, meta *metadata.FileMetaData) []int {
	n := meta.NumRowGroups()
	size := meta.GetSourceFileSize()
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	if task.Start == 0 && (task.Length == 0 || task.Length == task.File.FileSizeBytes()) {
		return all
	}
	start, length := task.Start, task.Length
	if size > 0 && start >= 0 && start <= size && length > size-start {
		length = size - start
	}
	offsets := task.File.SplitOffsets()
	if len(offsets) != n || !validSplitOffsets(offsets, size) {
		offsets = make([]int64, n)
		for g := range offsets {
			offsets[g] = groupSplitOffset(meta.RowGroup(g))
		}
	}
	var out []int
	for g, off := range offsets {
		if off >= start && off < start+length {
			out = append(out, g)
		}
	}
	return out
}

// groupSplitOffset is where a row group starts for range selection: its first column's
// dictionary page, else its first data page, else the group's file offset (iceberg-go's
// parquetRowGroupSplitOffset).
func groupSplitOffset(rg *metadata.RowGroupMetaData) int64 {
	if rg.NumColumns() > 0 {
		if cc, err := rg.ColumnChunk(0); err == nil {
			data := cc.DataPageOffset()
			if cc.HasDictionaryPage() {
				if d := cc.DictionaryPageOffset(); d >= 0 && (data < 0 || d < data) {
					return d
				}
			}
			if data >= 0 {
				return data
			}
		}
	}
	return rg.FileOffset()
}

// directReader turns the Parquet reader's batches into the scan's output batches. It reads one
// row group at a time, so that no batch spans two: a batch across row groups would be
// concatenated by the reader, dictionaries unified. With a column cache, each row group's
// columns come from the cache where it holds them and the rest from the file; a row group read
// to its end puts the columns it read into the cache, unless the read is catalog.ReadOnce.
type directReader struct {
	task   *scanTask
	plan   directRead
	src    *directFile
	groups []int // row groups not yet opened
	cur    *groupRead
	// recycled allocates the fixed-width columns decoded for a read the cache does not keep
	// (nil until first needed).
	recycled *mempool.Recycler
}

// groupRead is the row group being read.
type groupRead struct {
	group int
	// rows are the group's rows, done those read so far.
	rows, done int64
	// cached holds, per leaf, the cached batches; nil for the leaves read from the file.
	cached [][]arrow.Array
	// missing are the indices (in plan.leaves) of the leaves read from the file, ascending.
	missing []int
	// fixed holds, per missing leaf, its decoder when fixedchunk decodes it (nil: rr reads it).
	fixed []*fixedchunk.Reader
	rr    pqarrow.RecordReader // nil when no missing leaf needs it
	next  int                  // index of the next batch
	// fresh holds, per missing leaf, the batches read so far, for the cache.
	fresh [][]arrow.Array
}

func (g *groupRead) release() {
	if g.rr != nil {
		g.rr.Release()
	}
	for _, f := range g.fixed {
		if f != nil {
			_ = f.Close()
		}
	}
	for _, b := range g.cached {
		releaseAll(b)
	}
	for _, b := range g.fresh {
		releaseAll(b)
	}
}

func (r *directReader) close() {
	if r.cur != nil {
		r.cur.release()
		r.cur = nil
	}
	if r.recycled != nil {
		r.recycled.Close()
	}
	r.src.close()
}

func (r *directReader) pull() (arrow.RecordBatch, error) {
	for {
		if r.cur == nil {
			if len(r.groups) == 0 {
				return nil, nil
			}
			g, err := r.openGroup(r.groups[0])
			if err != nil {
				return nil, r.task.readErr(err)
			}
			r.cur, r.groups = g, r.groups[1:]
		}
		read, rows, done, err := r.nextBatch(r.cur)
		if err != nil {
			return nil, r.task.readErr(err)
		}
		if done {
			r.finishGroup(r.cur)
			r.cur = nil
			continue
		}
		out, err := r.convert(read, rows)
		releaseAll(read)
		if err != nil {
			return nil, r.task.readErr(err)
		}
		return out, nil
	}
}

// chunkKey names leaf i of the plan in row group g.
func (r *directReader) chunkKey(g, i int) chunkKey {
	return chunkKey{file: r.src.key, group: g, leaf: r.plan.leaves[i], typ: r.plan.types[i].String()}
}

// openGroup starts reading row group g: the cached leaves from the cache, the others from the
// file, fixed-width ones through fixedchunk.
func (r *directReader) openGroup(g int) (*groupRead, error) {
	gr := &groupRead{group: g, rows: r.src.meta.RowGroup(g).NumRows(), cached: make([][]arrow.Array, len(r.plan.leaves))}
	for i := range r.plan.leaves {
		if r.src.cache != nil {
			if b := r.src.cache.chunk(r.chunkKey(g, i)); b != nil {
				gr.cached[i] = b
				continue
			}
		}
		gr.missing = append(gr.missing, i)
	}
	if len(gr.missing) == 0 {
		return gr, nil
	}
	fr, err := r.src.reader()
	if err != nil {
		gr.release()
		return nil, err
	}
	gr.fresh = make([][]arrow.Array, len(gr.missing))
	gr.fixed = make([]*fixedchunk.Reader, len(gr.missing))
	var leaves []int // read by rr
	for j, i := range gr.missing {
		if gr.fixed[j], err = r.chunkDecoder(g, i); err != nil {
			gr.release()
			return nil, err
		}
		if gr.fixed[j] == nil {
			leaves = append(leaves, r.plan.leaves[i])
		}
	}
	if len(leaves) > 0 {
		if gr.rr, err = fr.GetRecordReader(r.src.ctx, leaves, []int{g}); err != nil {
			gr.release()
			return nil, err
		}
	}
	return gr, nil
}

// chunkDecoder is the fixedchunk reader of plan leaf i in row group g: its indices for a leaf
// read as a dictionary, its values for a fixed-width one that fixedchunk.Supports; nil when
// arrow-go's reader is to read it.
func (r *directReader) chunkDecoder(g, i int) (*fixedchunk.Reader, error) {
	leaf := r.plan.leaves[i]
	rg := r.src.pf.RowGroup(g)
	cc, err := rg.MetaData().ColumnChunk(leaf)
	if err != nil {
		return nil, err
	}
	col := r.src.meta.Schema.Column(leaf)
	flat := col.MaxRepetitionLevel() == 0 && col.MaxDefinitionLevel() <= 1
	if !(r.plan.dict[i] && flat) && !fixedchunk.Supports(col, cc, r.plan.types[i]) {
		return nil, nil
	}
	pages, err := rg.GetColumnPageReader(leaf)
	if err != nil {
		return nil, err
	}
	var dec *fixedchunk.Reader
	if r.plan.dict[i] {
		dec, err = fixedchunk.NewIndexReader(pages, col, r.fixedAlloc())
	} else {
		dec, err = fixedchunk.NewReader(pages, col, r.plan.types[i], r.fixedAlloc())
	}
	if err != nil {
		_ = pages.Close()
		return nil, err
	}
	r.task.state.table.cat.fixedChunks.Add(1)
	return dec, nil
}

// fixedAlloc is what fixed-width columns are decoded into: the file's allocator when the
// cache keeps them, else buffers recycled from the read's earlier batches.
func (r *directReader) fixedAlloc() memory.Allocator {
	if r.src.keep {
		return r.src.mem
	}
	if r.recycled == nil {
		r.recycled = mempool.NewRecycler(r.src.mem, directRecycledBytes, mempool.Unlimited(), "direct reads")
	}
	return r.recycled
}

// nextBatch returns the next batch's columns, one per plan leaf (dictionaries expanded, each
// retained for the caller), and its row count; done at the group's end. Every batch of a group
// but its last holds directBatchRows rows, as the Parquet reader cuts them.
func (r *directReader) nextBatch(g *groupRead) (read []arrow.Array, rows int64, done bool, err error) {
	read = make([]arrow.Array, len(r.plan.leaves))
	if len(g.missing) == 0 {
		if g.next == len(g.cached[0]) {
			return nil, 0, true, nil
		}
		for i := range read {
			read[i] = g.cached[i][g.next]
			read[i].Retain()
		}
		g.next++
		return read, int64(read[0].Len()), false, nil
	}
	rows = min(directBatchRows, g.rows-g.done)
	if rows <= 0 {
		if g.rr != nil && g.rr.Next() && g.rr.RecordBatch().NumRows() > 0 {
			return nil, 0, false, fmt.Errorf("row group %d: the file gave more than its %d rows", g.group, g.rows)
		}
		if g.rr != nil {
			if err := g.rr.Err(); err != nil {
				return nil, 0, false, err
			}
		}
		if n := cachedBatches(g); n != g.next {
			return nil, 0, false, fmt.Errorf("row group %d: the file gave %d batches, the column cache holds %d", g.group, g.next, n)
		}
		return nil, 0, true, nil
	}
	var rec arrow.RecordBatch
	if g.rr != nil {
		for {
			if !g.rr.Next() {
				if err := g.rr.Err(); err != nil {
					return nil, 0, false, err
				}
				return nil, 0, false, fmt.Errorf("row group %d: the file gave %d of its %d rows", g.group, g.done, g.rows)
			}
			if rec = g.rr.RecordBatch(); rec.NumRows() > 0 {
				break
			}
		}
		if rec.NumRows() != rows {
			return nil, 0, false, fmt.Errorf("row group %d: a batch of %d rows where %d were due", g.group, rec.NumRows(), rows)
		}
	}
	fromRR := 0
	for j, i := range g.missing {
		if f := g.fixed[j]; f != nil {
			if read[i], err = r.decode(f, i, int(rows)); err != nil {
				releaseAll(read)
				return nil, 0, false, err
			}
		} else {
			if int(rec.NumCols()) <= fromRR {
				releaseAll(read)
				return nil, 0, false, fmt.Errorf("parquet reader returned %d columns, want more", rec.NumCols())
			}
			col := rec.Column(fromRR)
			fromRR++
			if d, ok := col.(*array.Dictionary); ok {
				plain, err := expandDictionary(d, r.src.mem)
				if err != nil {
					releaseAll(read)
					return nil, 0, false, err
				}
				read[i] = plain
			} else {
				col.Retain()
				read[i] = col
			}
		}
		if r.src.keep {
			read[i].Retain()
			g.fresh[j] = append(g.fresh[j], read[i])
		}
	}
	if rec != nil && int(rec.NumCols()) != fromRR {
		releaseAll(read)
		return nil, 0, false, fmt.Errorf("parquet reader returned %d columns, want %d", rec.NumCols(), fromRR)
	}
	for i, b := range g.cached {
		if b == nil {
			continue
		}
		if g.next >= len(b) || int64(b[g.next].Len()) != rows {
			releaseAll(read)
			return nil, 0, false, fmt.Errorf("row group %d: batch %d of the file has %d rows, the column cache's differs", g.group, g.next, rows)
		}
		b[g.next].Retain()
		read[i] = b[g.next]
	}
	g.next++
	g.done += rows
	return read, rows, false, nil
}

// decode reads the next n rows of plan leaf i from its fixedchunk reader: its values, or for
// a leaf read as a dictionary its indices expanded into values.
func (r *directReader) decode(f *fixedchunk.Reader, i, n int) (arrow.Array, error) {
	col, err := f.Next(n)
	if err != nil || !r.plan.dict[i] {
		return col, err
	}
	defer col.Release()
	offsets, values := f.Dictionary()
	return expandIndices(r.plan.types[i], col.(*array.Int32), offsets, values, r.fixedAlloc())
}

// cachedBatches is how many batches the group's cached leaves hold (g.next when none is
// cached).
func cachedBatches(g *groupRead) int {
	for _, b := range g.cached {
		if b != nil {
			return len(b)
		}
	}
	return g.next
}

// finishGroup puts the leaves read to the group's end into the cache and lets the group go.
func (r *directReader) finishGroup(g *groupRead) {
	if r.src.keep {
		for j, i := range g.missing {
			r.src.cache.putChunk(r.chunkKey(g.group, i), g.fresh[j])
		}
	}
	g.release()
}

// convert builds the output batch from one batch of the plan's leaves: columns in output order
// with the output types.
func (r *directReader) convert(read []arrow.Array, rows int64) (arrow.RecordBatch, error) {
	st := r.task.state
	cols := make([]arrow.Array, len(r.plan.fromCol))
	defer releaseAll(cols)
	for o, i := range r.plan.fromCol {
		c, err := conform(read[i], st.schema.Field(o).Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", st.outNames[o], err)
		}
		cols[o] = c
	}
	return array.NewRecordBatch(st.schema, cols, rows), nil
}
