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
// Any task that does not qualify, or whose file does not, is read by iceberg-go as before.

// directBatchRows is the rows per batch of a direct read: iceberg-go's default batch size, so
// that batches look alike whichever reader made them.
const directBatchRows = 1 << 17

// directRead is a planned direct read's column mapping for one file.
type directRead struct {
	leaves  []int  // Parquet leaf columns read, ascending
	fromCol []int  // per output column, its index among leaves
	dict    []bool // per leaf: read as a dictionary, then expanded
}

// canReadDirect reports whether a task may be read directly, as far as planning can tell.
func canReadDirect(pt prunedTask, filtered bool, limit int64) bool {
	t := pt.task
	return limit == 0 && (pt.tested || !filtered) &&
		len(t.DeleteFiles) == 0 && len(t.EqualityDeleteFiles) == 0 && len(t.DeletionVectorFiles) == 0
}

// openDirect opens the task's direct read; nil without an error when the file does not qualify
// (the caller then reads the task through iceberg-go).
func (s *scanTask) openDirect(ctx context.Context, mem memory.Allocator) (array.RecordReader, error) {
	st := s.state
	fsys, err := st.readTbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	f, err := fsys.Open(s.task.File.FilePath())
	if err != nil {
		return nil, err
	}
	pf, err := file.NewParquetReader(f, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	closeFile := func() { _ = pf.Close() }
	meta := pf.MetaData()
	groups := directRowGroups(s.task, meta)
	plan, ok := st.directColumns(meta, groups)
	if !ok {
		closeFile()
		return nil, nil
	}
	props := pqarrow.ArrowReadProperties{Parallel: true, BatchSize: directBatchRows}
	for i, leaf := range plan.leaves {
		props.SetReadDict(leaf, plan.dict[i])
	}
	fr, err := pqarrow.NewFileReader(pf, props, mem)
	if err != nil {
		closeFile()
		return nil, err
	}
	// Every read column is top-level, so the reader's columns are the leaves' fields in file
	// order; check that each has the type the table expects before trusting the mapping.
	for i, leaf := range plan.leaves {
		fi := fieldOfLeaf(fr.Manifest, leaf)
		if fi < 0 {
			closeFile()
			return nil, nil
		}
		got := fr.Manifest.Fields[fi].Field.Type
		if plan.dict[i] {
			dt, isDict := got.(*arrow.DictionaryType)
			if !isDict {
				closeFile()
				return nil, nil
			}
			got = dt.ValueType
		}
		for o, c := range plan.fromCol {
			if c == i && !arrow.TypeEqual(got, st.schema.Field(o).Type) {
				closeFile()
				return nil, nil
			}
		}
	}
	if len(groups) == 0 {
		closeFile()
		st.table.cat.directReads.Add(1)
		return stream.Empty(st.schema), nil
	}
	st.table.cat.directReads.Add(1)
	r := &directReader{task: s, plan: plan, ctx: ctx, fr: fr, groups: groups, mem: mem}
	return stream.Pull(ctx, st.schema, r.pull, func() {
		if r.rr != nil {
			r.rr.Release()
		}
		closeFile()
	}), nil
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
// concatenated by the reader, dictionaries unified.
type directReader struct {
	task   *scanTask
	plan   directRead
	ctx    context.Context
	fr     *pqarrow.FileReader
	groups []int                // row groups not yet opened
	rr     pqarrow.RecordReader // the open row group's; nil before the first
	mem    memory.Allocator
}

func (r *directReader) pull() (arrow.RecordBatch, error) {
	for {
		if r.rr == nil || !r.rr.Next() {
			if r.rr != nil {
				err := r.rr.Err()
				r.rr.Release()
				r.rr = nil
				if err != nil {
					return nil, r.task.readErr(err)
				}
			}
			if len(r.groups) == 0 {
				return nil, nil
			}
			rr, err := r.fr.GetRecordReader(r.ctx, r.plan.leaves, r.groups[:1])
			if err != nil {
				return nil, r.task.readErr(err)
			}
			r.rr, r.groups = rr, r.groups[1:]
			continue
		}
		rec := r.rr.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		out, err := r.convert(rec)
		if err != nil {
			return nil, r.task.readErr(err)
		}
		return out, nil
	}
}

// convert builds the output batch: dictionary columns expanded, columns in output order with
// the output types.
func (r *directReader) convert(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	st := r.task.state
	if int(rec.NumCols()) != len(r.plan.leaves) {
		return nil, fmt.Errorf("parquet reader returned %d columns, want %d", rec.NumCols(), len(r.plan.leaves))
	}
	read := make([]arrow.Array, len(r.plan.leaves))
	defer func() {
		for _, c := range read {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i := range read {
		col := rec.Column(i)
		if d, ok := col.(*array.Dictionary); ok {
			plain, err := expandDictionary(d, r.mem)
			if err != nil {
				return nil, err
			}
			read[i] = plain
			continue
		}
		col.Retain()
		read[i] = col
	}
	cols := make([]arrow.Array, len(r.plan.fromCol))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for o, i := range r.plan.fromCol {
		c, err := conform(read[i], st.schema.Field(o).Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", st.outNames[o], err)
		}
		cols[o] = c
	}
	return array.NewRecordBatch(st.schema, cols, rec.NumRows()), nil
}
