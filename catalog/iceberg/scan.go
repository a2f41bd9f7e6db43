package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

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

	planned := tasks
	limit := int64(0)
	if req.Limit > 0 && len(req.Filter) == 0 {
		limit = req.Limit
		tasks = tasksForLimit(tasks, limit)
	}

	counter := &storage.Counter{}
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
	readScan, err := t.newScan(readTbl, readOpts...)
	if err != nil {
		return nil, t.planErr(err)
	}

	st := &scanState{
		table:    t,
		scan:     readScan,
		schema:   arrow.NewSchema(outFields, nil),
		outNames: make([]string, len(cols)),
	}
	for i, c := range cols {
		st.outNames[i] = fields[c].Name
	}
	plan := &catalog.ScanPlan{Fetched: counter.String}
	for _, task := range tasks {
		// The planner's residual derives from the planning filter; reading applies the read
		// filter (see icebergFilter) instead. A nil residual means exactly that.
		task.Residual = nil
		plan.Tasks = append(plan.Tasks, &scanTask{state: st, task: task})
	}
	plan.Explain = t.explain(ctx, tasks, planned, readNames, translated > 0)
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
		w := 1 << 20
		switch ft := f.Type.(type) {
		case iceberg.BooleanType:
			w = 1
		case iceberg.Int32Type, iceberg.DateType, iceberg.Float32Type:
			w = 4
		case iceberg.Int64Type, iceberg.Float64Type, iceberg.TimeType, iceberg.TimestampType,
			iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
			w = 8
		case iceberg.DecimalType, iceberg.UUIDType:
			w = 16
		case iceberg.FixedType:
			w = ft.Len()
		case iceberg.StringType, iceberg.BinaryType:
			w = 64
		}
		if w < bestW {
			best, bestW = i, w
		}
	}
	return best
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
	table    *Table
	scan     *table.Scan // reads through the plan's counting IO
	schema   *arrow.Schema
	outNames []string // the Iceberg column each output column reads
}

type scanTask struct {
	state *scanState
	task  table.FileScanTask
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

// Open streams the task's rows: iceberg-go reads the file (pruning row groups by their
// statistics), applies its position and equality deletes and the residual filter, and maps
// columns by field id; the batches come out with exactly the plan's output schema.
func (s *scanTask) Open(ctx context.Context, mem memory.Allocator) (array.RecordReader, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.readErr(err)
	}
	_, seq, err := s.state.scan.ReadTasks(compute.WithAllocator(ctx, mem), []table.FileScanTask{s.task})
	if err != nil {
		return nil, s.readErr(err)
	}
	next, stop := iter.Pull2(seq)
	r := &taskReader{task: s, ctx: ctx, next: next, stop: stop}
	r.refs.Store(1)
	return r, nil
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

// taskReader adapts iceberg-go's batch iterator to an array.RecordReader.
type taskReader struct {
	task *scanTask
	ctx  context.Context
	next func() (arrow.RecordBatch, error, bool)
	stop func()
	refs atomic.Int64
	cur  arrow.RecordBatch
	err  error
	done bool
}

func (r *taskReader) Retain() { r.refs.Add(1) }

func (r *taskReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	r.finish()
}

func (r *taskReader) finish() {
	if !r.done {
		r.done = true
		r.stop()
	}
}

func (r *taskReader) Schema() *arrow.Schema          { return r.task.state.schema }
func (r *taskReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the deprecated name of RecordBatch.
func (r *taskReader) Record() arrow.RecordBatch { return r.cur }
func (r *taskReader) Err() error                { return r.err }

func (r *taskReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	for !r.done {
		if err := r.ctx.Err(); err != nil {
			r.fail(err)
			return false
		}
		rec, err, ok := r.next()
		if !ok {
			r.finish()
			return false
		}
		if err != nil {
			if rec != nil {
				rec.Release()
			}
			r.fail(err)
			return false
		}
		out, err := r.conform(rec)
		rec.Release()
		if err != nil {
			r.fail(err)
			return false
		}
		if out.NumRows() == 0 {
			out.Release()
			continue
		}
		r.cur = out
		return true
	}
	return false
}

func (r *taskReader) fail(err error) {
	r.err = r.task.readErr(err)
	r.finish()
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

// explain renders the plan summary: the snapshot, kept/total data files, delete files, kept/total
// row groups (from split offsets, when every file has them) and the projected columns' on-disk
// bytes of the kept files. tasks are the tasks kept, planned all those the filter let through.
func (t *Table) explain(ctx context.Context, tasks, planned []table.FileScanTask, readNames []string, filtered bool) string {
	var b strings.Builder
	if t.pin.snap == nil {
		b.WriteString("snapshot=none files=0/0 delete_files=0 bytes_planned=0")
		return b.String()
	}
	ids := map[int]bool{}
	for _, name := range readNames {
		if f, ok := t.pin.schema.FindFieldByName(name); ok {
			collectIDs(f, ids)
		}
	}
	files := map[string]bool{}
	deletes := map[string]bool{}
	var bytesPlanned, keptGroups int64
	groupsKnown := true
	for _, task := range tasks {
		f := task.File
		files[f.FilePath()] = true
		for _, group := range [][]iceberg.DataFile{task.DeleteFiles, task.EqualityDeleteFiles, task.DeletionVectorFiles} {
			for _, d := range group {
				deletes[d.FilePath()] = true
			}
		}
		bytesPlanned += projectedBytes(task, ids)
		if n, ok := rowGroupsIn(task); ok {
			keptGroups += n
		} else {
			groupsKnown = false
		}
	}
	totals := t.cat.totals(ctx, t, planned, filtered)
	fmt.Fprintf(&b, "snapshot=%d files=%d/%s delete_files=%d", t.pin.snap.SnapshotID, len(files), totals.filesText(), len(deletes))
	if groupsKnown && totals.rowGroups >= 0 {
		fmt.Fprintf(&b, " row_groups=%d/%d", keptGroups, totals.rowGroups)
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

// snapshotTotals are the data files and row groups of a whole snapshot. rowGroups is -1 when
// unknown (some file lacks split offsets, or they could not be counted); files is -1 when
// unknown.
type snapshotTotals struct {
	files     int64
	rowGroups int64
}

func (s snapshotTotals) filesText() string {
	if s.files < 0 {
		return "?"
	}
	return strconv.FormatInt(s.files, 10)
}

// totalsOf counts the data files and row groups of a filterless plan.
func totalsOf(tasks []table.FileScanTask) snapshotTotals {
	seen := map[string]bool{}
	var tot snapshotTotals
	for _, task := range tasks {
		f := task.File
		if seen[f.FilePath()] {
			continue
		}
		seen[f.FilePath()] = true
		tot.files++
		if tot.rowGroups >= 0 {
			if offs := f.SplitOffsets(); len(offs) > 0 {
				tot.rowGroups += int64(len(offs))
			} else {
				tot.rowGroups = -1
			}
		}
	}
	return tot
}

// summaryFiles reads the snapshot summary's total-data-files, -1 when absent.
func summaryFiles(snap *table.Snapshot) int64 {
	if snap == nil || snap.Summary == nil {
		return -1
	}
	if v, ok := snap.Summary.Properties["total-data-files"]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return -1
}
