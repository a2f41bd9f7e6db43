package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg/storage"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/stream"
)

// Scan plans a read of the pinned snapshot. iceberg-go prunes manifests, partitions and files
// with the translated filter (see icebergFilter); each planned file scan task (a file, or a
// range of row groups of one when iceberg-go splits large files) becomes one catalog.ScanTask.
// Every byte the tasks read goes through one storage.Counter, which Fetched reports.
func (t *Table) Scan(ctx context.Context, req catalog.ScanRequest) (*catalog.ScanPlan, error) {
	fields := t.pin.schema.Fields()
	cols := req.Columns
	if cols == nil {
		cols = make([]int, len(fields))
		for i := range cols {
			cols[i] = i
		}
	}
	outFields := make([]arrow.Field, len(cols))
	var readNames []string
	for i, c := range cols {
		if c < 0 || c >= len(fields) {
			return nil, errs.Internalf("iceberg table %s: scan of column %d, which the table (%d columns) lacks", t.qualified(), c, len(fields))
		}
		outFields[i] = t.schema.Field(c)
		if !slices.Contains(readNames, fields[c].Name) {
			readNames = append(readNames, fields[c].Name)
		}
	}
	if len(readNames) == 0 && len(fields) > 0 {
		// Only row counts are wanted; iceberg-go reads all columns when none is selected, so
		// read the cheapest one.
		readNames = []string{fields[t.cheapestColumn()].Name}
	}
	planFilter, translated := icebergFilter(req.Filter, t.pin.schema, false)
	readFilter, _ := icebergFilter(req.Filter, t.pin.schema, true)
	opts := []table.ScanOption{
		table.WithSelectedFields(readNames...),
		table.WithCaseSensitive(true),
	}

	planScan, err := t.newScan(t.tbl, append(slices.Clone(opts), table.WithRowFilter(planFilter))...)
	if err != nil {
		return nil, t.planErr(err)
	}
	tasks, err := planScan.PlanFiles(ctx)
	_ = planScan.Close()
	if err != nil {
		return nil, t.planErr(err)
	}

	readIDs := map[int]bool{}
	for _, name := range readNames {
		if f, ok := t.pin.schema.FindFieldByName(name); ok {
			collectIDs(f, readIDs)
		}
	}
	counter := &storage.Counter{}

	// Row groups: without a filter planning stays metadata-only and every row group of the
	// kept files is read; with one, the kept files' footers narrow the tasks.
	kept := make([]prunedTask, len(tasks))
	for i, task := range tasks {
		kept[i] = prunedTask{task: task, groups: -1, bytes: -1}
	}
	considered := int64(0)
	for _, task := range tasks {
		if n, ok := rowGroupsIn(task); ok && considered >= 0 {
			considered += n
		} else {
			considered = -1
		}
	}
	planned := tasks
	limit := int64(0)
	if req.Limit > 0 && len(req.Filter) == 0 {
		limit = req.Limit
		tasks = tasksForLimit(tasks, limit)
		kept = kept[:len(tasks)]
	}
	if gf := newGroupFilter(req.Filter, t.pin.schema); len(gf) > 0 && len(tasks) <= maxFooterFiles {
		if base, err := t.fs(ctx); err == nil {
			// Footers are read through the table's IO, not the tasks' counter: Fetched
			// reports what the tasks read.
			res := t.pruneRowGroups(ctx, base, tasks, gf, readIDs)
			kept, considered = res.tasks, res.considered
		}
	}
	if limit == 0 {
		kept = splitTasks(kept, t.cat.splitBytes())
	}
	if err := ctx.Err(); err != nil {
		return nil, t.planErr(err)
	}

	readTbl := table.New(t.ident, t.tbl.Metadata(), t.tbl.MetadataLocation(),
		func(ctx context.Context) (iceio.IO, error) {
			base, err := t.fs(ctx)
			if err != nil {
				return nil, err
			}
			return storage.Counting(base, counter), nil
		}, nil)
	readOpts := append(slices.Clone(opts), table.WithRowFilter(readFilter), table.WithMaxConcurrency(1))
	if limit > 0 {
		readOpts = append(readOpts, table.WithLimit(limit))
	}
	st := &scanState{
		table:     t,
		readTbl:   readTbl,
		readOpts:  readOpts,
		readNames: readNames,
		schema:    arrow.NewSchema(outFields, nil),
		outNames:  make([]string, len(cols)),
		scans:     map[string]*table.Scan{},
	}
	for i, c := range cols {
		st.outNames[i] = fields[c].Name
	}
	plan := &catalog.ScanPlan{Fetched: counter.String}
	for _, pt := range kept {
		task := pt.task
		task.Residual = readResidual(pt)
		scan, err := st.scanFor(t.extraColumn(task.File, readIDs))
		if err != nil {
			return nil, t.planErr(err)
		}
		direct := !t.cat.noDirect && canReadDirect(pt, translated > 0, limit)
		plan.Tasks = append(plan.Tasks, &scanTask{state: st, task: task, scan: scan, direct: direct})
	}
	plan.Explain = t.explain(ctx, kept, planned, considered, readIDs, translated > 0)
	return plan, nil
}

// newScan starts a scan of tbl pinned like t.
func (t *Table) newScan(tbl *table.Table, opts ...table.ScanOption) (*table.Scan, error) {
	switch t.pin.kind {
	case pinSnapshot:
		return tbl.Scan(append(opts, table.WithSnapshotID(t.pin.snap.SnapshotID))...), nil
	case pinBranch:
		return tbl.Scan(opts...).UseRef(t.pin.ref)
	}
	return tbl.Scan(opts...), nil
}

func (t *Table) planErr(err error) error {
	cat := errs.Internal
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		cat = errs.Canceled
	case errors.Is(err, fs.ErrNotExist):
		cat = errs.NotFound
	}
	return t.cat.scrub(&errs.Error{Category: cat, Msg: "plan iceberg table " + t.qualified(), Err: err})
}

// cheapestColumn is the top-level primitive column with the narrowest type, the one to read
// when a scan needs only row counts.
func (t *Table) cheapestColumn() int {
	best, bestW := 0, 1<<30
	for i, f := range t.pin.schema.Fields() {
		if w := typeWidth(f.Type); w < bestW {
			best, bestW = i, w
		}
	}
	return best
}

// typeWidth estimates the bytes a value of type t takes, to find cheap columns.
func typeWidth(t iceberg.Type) int {
	switch ft := t.(type) {
	case iceberg.BooleanType:
		return 1
	case iceberg.Int32Type, iceberg.DateType, iceberg.Float32Type:
		return 4
	case iceberg.Int64Type, iceberg.Float64Type, iceberg.TimeType, iceberg.TimestampType,
		iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return 8
	case iceberg.DecimalType, iceberg.UUIDType:
		return 16
	case iceberg.FixedType:
		return ft.Len()
	case iceberg.StringType, iceberg.BinaryType:
		return 64
	}
	return 1 << 20
}

// tasksForLimit keeps the leading tasks that certainly hold limit rows: tasks over whole files
// without deletes count their files' record counts; any other task counts nothing.
func tasksForLimit(tasks []table.FileScanTask, limit int64) []table.FileScanTask {
	var rows int64
	for i, task := range tasks {
		if rows >= limit {
			return tasks[:i]
		}
		if len(task.DeleteFiles) == 0 && len(task.EqualityDeleteFiles) == 0 && len(task.DeletionVectorFiles) == 0 &&
			task.Start == 0 && (task.Length == 0 || task.Length >= task.File.FileSizeBytes()) {
			rows += task.File.Count()
		}
	}
	return tasks
}

// scanState is what the tasks of one plan share.
type scanState struct {
	table     *Table
	readTbl   *table.Table // the table read through the plan's counting IO
	readOpts  []table.ScanOption
	readNames []string // the Iceberg columns the scan selects
	schema    *arrow.Schema
	outNames  []string // the Iceberg column each output column reads

	mu    sync.Mutex
	scans map[string]*table.Scan // by the extra column selected ("" for none)
}

// scanFor returns the read scan selecting readNames plus extra (when not empty and not among
// them); the batches it yields carry extra too, which conform leaves out.
func (st *scanState) scanFor(extra string) (*table.Scan, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if s, ok := st.scans[extra]; ok {
		return s, nil
	}
	names := st.readNames
	if extra != "" && !slices.Contains(names, extra) {
		names = append(slices.Clone(names), extra)
	}
	s, err := st.table.newScan(st.readTbl, append(slices.Clone(st.readOpts), table.WithSelectedFields(names...))...)
	if err != nil {
		return nil, err
	}
	st.scans[extra] = s
	return s, nil
}

// allColumns is the extra-column key that selects every top-level column of the pinned schema.
const allColumns = "\x00all"

// fallbackScan selects every top-level column: for a file whose metadata does not say which
// columns it holds and that has none of the selected ones.
func (st *scanState) fallbackScan() (*table.Scan, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if s, ok := st.scans[allColumns]; ok {
		return s, nil
	}
	var names []string
	for _, f := range st.table.pin.schema.Fields() {
		names = append(names, f.Name)
	}
	s, err := st.table.newScan(st.readTbl, append(slices.Clone(st.readOpts), table.WithSelectedFields(names...))...)
	if err != nil {
		return nil, err
	}
	st.scans[allColumns] = s
	return s, nil
}

// extraColumn names a column to read besides the selected ones from a data file that holds
// none of them (all were added to the table after the file was written): iceberg-go v0.7.0
// fails to read a file in which no requested column exists ("no leaf column readers matched
// col indices"), so such a read takes the file's cheapest column along. The file's column
// sizes and value counts, keyed by field id, say which columns it holds; "" when it holds a
// selected column or its metadata does not tell (Open retries those; see isNoColumnsErr).
func (t *Table) extraColumn(f iceberg.DataFile, readIDs map[int]bool) string {
	sizes := f.ColumnSizes()
	if len(sizes) == 0 || len(readIDs) == 0 {
		return ""
	}
	has := func(id int) bool {
		if _, ok := sizes[id]; ok {
			return true
		}
		if _, ok := f.ValueCounts()[id]; ok {
			return true
		}
		_, ok := f.NullValueCounts()[id]
		return ok
	}
	for id := range readIDs {
		if has(id) {
			return ""
		}
	}
	best, bestW := "", 1<<30
	for _, fld := range t.pin.schema.Fields() {
		if _, ok := fld.Type.(iceberg.PrimitiveType); !ok || !has(fld.ID) {
			continue
		}
		if w := typeWidth(fld.Type); w < bestW {
			best, bestW = fld.Name, w
		}
	}
	return best
}

// isNoColumnsErr reports iceberg-go's failure to read a file that holds none of the requested
// columns. arrow-go's pqarrow returns it as a plain errors.New, so only its text identifies it.
func isNoColumnsErr(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no leaf column readers matched col indices")
}

type scanTask struct {
	state *scanState
	task  table.FileScanTask
	scan  *table.Scan // reads through the plan's counting IO
	// direct says the task may be read without iceberg-go's reader (see canReadDirect).
	direct bool
}

// EstimatedRows is the file's record count, in proportion when the task is a range of it.
func (s *scanTask) EstimatedRows() int64 {
	f := s.task.File
	n := f.Count()
	if size := f.FileSizeBytes(); size > 0 && s.task.Length > 0 && s.task.Length < size {
		n = int64(float64(n) * float64(s.task.Length) / float64(size))
	}
	return n
}

// EstimatedBytes is the length of the file range the task reads (catalog.SizedTask).
func (s *scanTask) EstimatedBytes() int64 {
	if s.task.Length > 0 {
		return s.task.Length
	}
	return s.task.File.FileSizeBytes()
}

// Open streams the task's rows: iceberg-go reads the file (pruning row groups by their
// statistics), applies its position and equality deletes and the residual filter, and maps
// columns by field id; the batches come out with exactly the plan's output schema. A task that
// qualifies is read directly instead (see direct.go), with the same rows.
func (s *scanTask) Open(ctx context.Context, mem memory.Allocator) (array.RecordReader, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.readErr(err)
	}
	if s.direct {
		r, err := s.openDirect(ctx, mem)
		if err != nil {
			return nil, s.readErr(err)
		}
		if r != nil {
			return r, nil
		}
	}
	r := &taskReader{task: s, ctx: ctx, mem: mem}
	if err := r.start(s.scan); err != nil {
		return nil, s.readErr(err)
	}
	return stream.Pull(ctx, s.state.schema, r.pull, func() { r.stop() }), nil
}

// readErr names the table and the file in an error met reading them.
func (s *scanTask) readErr(err error) error {
	cat := errs.Internal
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		cat = errs.Canceled
	case errors.Is(err, fs.ErrNotExist):
		cat = errs.NotFound
	}
	t := s.state.table
	return t.cat.scrub(&errs.Error{Category: cat,
		Msg: fmt.Sprintf("read iceberg table %s file %s", t.qualified(), s.task.File.FilePath()), Err: err})
}

// taskReader pulls the batches of one task from iceberg-go's batch iterator for a
// stream.Pull reader, whose close callback stops the iterator.
type taskReader struct {
	task *scanTask
	ctx  context.Context
	mem  memory.Allocator
	next func() (arrow.RecordBatch, error, bool)
	stop func() // safe to call more than once
	// read says a batch came out; retried says the read already fell back to all columns.
	read, retried bool
}

// start begins reading the task with scan.
func (r *taskReader) start(scan *table.Scan) error {
	_, seq, err := scan.ReadTasks(compute.WithAllocator(r.ctx, r.mem), []table.FileScanTask{r.task.task})
	if err != nil {
		return err
	}
	r.next, r.stop = iter.Pull2(seq)
	return nil
}

// pull returns the task's next non-empty batch in the output schema, nil at the end.
func (r *taskReader) pull() (arrow.RecordBatch, error) {
	for {
		if err := r.ctx.Err(); err != nil {
			return nil, r.task.readErr(err)
		}
		rec, err, ok := r.next()
		if !ok {
			return nil, nil
		}
		if err != nil {
			if rec != nil {
				rec.Release()
			}
			if isNoColumnsErr(err) && !r.read && !r.retried {
				// The file holds none of the selected columns and its metadata did not
				// say so: read it again with every column (see extraColumn).
				r.retried = true
				r.stop()
				scan, serr := r.task.state.fallbackScan()
				if serr == nil {
					serr = r.start(scan)
				}
				if serr != nil {
					return nil, r.task.readErr(serr)
				}
				continue
			}
			return nil, r.task.readErr(err)
		}
		r.read = true
		out, err := r.conform(rec)
		rec.Release()
		if err != nil {
			return nil, r.task.readErr(err)
		}
		if out.NumRows() == 0 {
			out.Release()
			continue
		}
		return out, nil
	}
}

// conform reorders a batch's columns into the output order and gives them the output types.
func (r *taskReader) conform(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	st := r.task.state
	cols := make([]arrow.Array, len(st.outNames))
	release := func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}
	defer release()
	for i, name := range st.outNames {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("batch lacks column %s (has %s)", name, fieldPaths(rec.Schema()))
		}
		c, err := conform(rec.Column(idx[0]), st.schema.Field(i).Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", name, err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(st.schema, cols, rec.NumRows()), nil
}

// explain renders the plan summary: the snapshot, kept/total data files, delete files, kept/
// considered row groups (considered: those of the files file pruning kept; kept: those the
// tasks read, after row-group pruning when footers were read, else from split offsets; left
// out when unknown) and the on-disk bytes of the projected columns the tasks read.
func (t *Table) explain(ctx context.Context, kept []prunedTask, planned []table.FileScanTask, considered int64, ids map[int]bool, filtered bool) string {
	var b strings.Builder
	if t.pin.snap == nil {
		b.WriteString("snapshot=none files=0/0 delete_files=0 bytes_planned=0")
		return b.String()
	}
	files := map[string]bool{}
	deletes := map[string]bool{}
	var bytesPlanned, keptGroups int64
	groupsKnown := considered >= 0
	for _, pt := range kept {
		task := pt.task
		f := task.File
		files[f.FilePath()] = true
		for _, group := range [][]iceberg.DataFile{task.DeleteFiles, task.EqualityDeleteFiles, task.DeletionVectorFiles} {
			for _, d := range group {
				deletes[d.FilePath()] = true
			}
		}
		if pt.bytes >= 0 {
			bytesPlanned += pt.bytes
		} else {
			bytesPlanned += projectedBytes(task, ids)
		}
		if pt.groups >= 0 {
			keptGroups += pt.groups
		} else if n, ok := rowGroupsIn(task); ok {
			keptGroups += n
		} else {
			groupsKnown = false
		}
	}
	totalFiles := t.cat.totalFiles(ctx, t, planned, filtered)
	fmt.Fprintf(&b, "snapshot=%d files=%d/%s delete_files=%d", t.pin.snap.SnapshotID, len(files), totalFiles, len(deletes))
	if groupsKnown {
		fmt.Fprintf(&b, " row_groups=%d/%d", keptGroups, considered)
	}
	fmt.Fprintf(&b, " bytes_planned=%d", bytesPlanned)
	return b.String()
}

// collectIDs adds the field ids of f and everything nested in it.
func collectIDs(f iceberg.NestedField, ids map[int]bool) {
	ids[f.ID] = true
	switch t := f.Type.(type) {
	case *iceberg.StructType:
		for _, c := range t.FieldList {
			collectIDs(c, ids)
		}
	case *iceberg.ListType:
		collectIDs(t.ElementField(), ids)
	case *iceberg.MapType:
		collectIDs(t.KeyField(), ids)
		collectIDs(t.ValueField(), ids)
	}
}

// projectedBytes is the on-disk size of the projected columns in a task's range of its file:
// the column sizes the manifest records, or the whole file when it records none.
func projectedBytes(task table.FileScanTask, ids map[int]bool) int64 {
	f := task.File
	var n int64
	sizes := f.ColumnSizes()
	if len(sizes) == 0 {
		n = f.FileSizeBytes()
	} else {
		for id, size := range sizes {
			if ids[id] {
				n += size
			}
		}
	}
	if size := f.FileSizeBytes(); size > 0 && task.Length > 0 && task.Length < size {
		n = int64(float64(n) * float64(task.Length) / float64(size))
	}
	return n
}

// rowGroupsIn counts the row groups that start in a task's range of its file; each split
// offset starts one (the first one's range starts at 0, as iceberg-go splits).
func rowGroupsIn(task table.FileScanTask) (int64, bool) {
	offsets := task.File.SplitOffsets()
	if len(offsets) == 0 {
		return 0, false
	}
	end := task.Start + task.Length
	if task.Length <= 0 {
		end = task.File.FileSizeBytes()
	}
	var n int64
	for i, off := range offsets {
		if i == 0 {
			off = 0
		}
		if off >= task.Start && off < end {
			n++
		}
	}
	return n, true
}
