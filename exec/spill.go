package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
	"github.com/dustin/go-humanize"

	"github.com/cachedb/cachedb/internal/errs"
)

// Spill files
//
// An operator whose memory reservation is refused (sort, hash aggregate, hash join) moves what
// it holds to disk: Arrow IPC files, LZ4-compressed, in the task's spill directory. One
// spillFiles belongs to one execution of one operator (one reader); every file it created is
// removed by removeAll, which the reader's release calls on success, error and cancellation
// alike. Files are written once, closed, then read back batch by batch.

// SpillBudget bounds the bytes of spill files a process holds at once, so that a hostile query
// (a join that multiplies rows, sorted) fails with RESOURCE_EXHAUSTED instead of filling the
// disk. It is safe for concurrent use; the zero value has no limit.
type SpillBudget struct {
	limit int64
	used  atomic.Int64
}

// NewSpillBudget returns a budget of limit bytes (<= 0: no limit, only counted).
func NewSpillBudget(limit int64) *SpillBudget { return &SpillBudget{limit: max(limit, 0)} }

// Used is the bytes of spill files held now.
func (b *SpillBudget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Limit is the budget's limit (0: none).
func (b *SpillBudget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// errSpillFull marks the refusal of a spill budget: memory and disk are both exhausted, so
// spilling again (isExhausted) cannot help.
var errSpillFull = errors.New("memory and spill space exhausted")

func (b *SpillBudget) take(n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	used := b.used.Add(n)
	if b.limit > 0 && used > b.limit {
		b.used.Add(-n)
		return &errs.Error{Category: errs.ResourceExhausted, Err: errSpillFull,
			Msg: fmt.Sprintf("the spill limit of %s is reached (%s of spill files held): this query needs more memory and disk than the node has; give it a smaller input or raise --memory-limit or --spill-limit",
				humanize.IBytes(uint64(b.limit)), humanize.IBytes(uint64(used-n)))}
	}
	return nil
}

func (b *SpillBudget) give(n int64) {
	if b != nil && n > 0 {
		b.used.Add(-n)
	}
}

// defaultSpillDir is the spill directory of task contexts that name none: one per process, so
// that concurrent cachedb processes on one machine never share files.
var defaultSpillDir = filepath.Join(os.TempDir(), fmt.Sprintf("cachedb-spill-%d", os.Getpid()))

// spillDir is the directory tc's operators spill to.
func (tc *TaskContext) spillDir() string {
	if tc.SpillDir != "" {
		return tc.SpillDir
	}
	return defaultSpillDir
}

// spillFiles are the spill files of one operator execution.
type spillFiles struct {
	dir    string
	prefix string
	budget *SpillBudget
	mu     sync.Mutex
	paths  []string
	// held is what the files take of budget, given back by removeAll.
	held atomic.Int64
	// written counts the bytes written to the files (after compression); counter, when not
	// nil, too.
	written atomic.Int64
	counter *atomic.Int64
}

// newSpillFiles returns an empty set of spill files for tc, named after what spills ("sort");
// the bytes written are also counted for EXPLAIN ANALYZE when ctx is an instrumented
// operator's (see Analyzed).
func newSpillFiles(ctx context.Context, tc *TaskContext, prefix string) *spillFiles {
	counter, _ := ctx.Value(spillCounterKey{}).(*atomic.Int64)
	return &spillFiles{dir: tc.spillDir(), prefix: prefix, counter: counter, budget: tc.Spill}
}

// spillCounterKey keys the spilled-bytes counter of the instrumented operator executing.
type spillCounterKey struct{}

// Written is the number of bytes spilled so far.
func (s *spillFiles) Written() int64 { return s.written.Load() }

// create opens a new spill file for batches of schema.
func (s *spillFiles) create(schema *arrow.Schema, mem memory.Allocator) (*spillWriter, error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, errs.Internalf("creating spill directory: %v", err)
	}
	f, err := os.CreateTemp(s.dir, s.prefix+"-*.arrow")
	if err != nil {
		return nil, errs.Internalf("creating spill file: %v", err)
	}
	s.mu.Lock()
	s.paths = append(s.paths, f.Name())
	s.mu.Unlock()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema), ipc.WithAllocator(mem), ipc.WithLZ4())
	if err != nil {
		f.Close()
		return nil, errs.Internalf("writing spill file: %v", err)
	}
	return &spillWriter{files: s, f: f, w: w, schema: schema}, nil
}

// removeAll deletes every file created so far; files created later are not affected.
func (s *spillFiles) removeAll() {
	s.mu.Lock()
	paths := s.paths
	s.paths = nil
	s.mu.Unlock()
	for _, p := range paths {
		_ = os.Remove(p)
	}
	s.budget.give(s.held.Swap(0))
}

// spillWriter writes one spill file.
type spillWriter struct {
	files  *spillFiles
	f      *os.File
	w      *ipc.FileWriter
	schema *arrow.Schema
	rows   int64
	// maxBatch is the size of the largest batch written.
	maxBatch int64
	// counted is how much of the file the spill budget counts.
	counted int64
}

// write appends batch to the file (the caller keeps its reference).
func (w *spillWriter) write(batch arrow.RecordBatch) error {
	if batch.NumRows() == 0 {
		return nil
	}
	if err := w.w.Write(batch); err != nil {
		return errs.Internalf("writing spill file: %v", err)
	}
	// What the file grew by counts toward the spill budget (the writer writes through to it).
	if pos, err := w.f.Seek(0, io.SeekCurrent); err == nil && pos > w.counted {
		grew := pos - w.counted
		if err := w.files.budget.take(grew); err != nil {
			return err
		}
		w.counted = pos
		w.files.held.Add(grew)
	}
	w.rows += batch.NumRows()
	w.maxBatch = max(w.maxBatch, util.TotalRecordSize(batch))
	return nil
}

// finish closes the file and returns it as a run to read back.
func (w *spillWriter) finish() (*spillRun, error) {
	err := w.w.Close()
	if info, serr := w.f.Stat(); serr == nil {
		w.files.written.Add(info.Size())
		if w.files.counter != nil {
			w.files.counter.Add(info.Size())
		}
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, errs.Internalf("closing spill file: %v", err)
	}
	return &spillRun{path: w.f.Name(), schema: w.schema, rows: w.rows, maxBatch: w.maxBatch}, nil
}

// abort closes the file, abandoning it (spillFiles.removeAll deletes it).
func (w *spillWriter) abort() {
	_ = w.w.Close()
	_ = w.f.Close()
}

// spillRun is one finished spill file.
type spillRun struct {
	path   string
	schema *arrow.Schema
	rows   int64
	// maxBatch is the size of its largest batch: what reading it back holds at a time.
	maxBatch int64
}

// open returns a reader over the run's batches.
func (r *spillRun) open(mem memory.Allocator) (*spillReader, error) {
	f, err := os.Open(r.path)
	if err != nil {
		return nil, errs.Internalf("opening spill file: %v", err)
	}
	fr, err := ipc.NewFileReader(f, ipc.WithAllocator(mem), ipc.WithSchema(r.schema))
	if err != nil {
		f.Close()
		return nil, errs.Internalf("reading spill file: %v", err)
	}
	return &spillReader{f: f, r: fr}, nil
}

// spillReader reads a spill file back one batch at a time.
type spillReader struct {
	f *os.File
	r *ipc.FileReader
	i int
}

// next returns the next batch (the caller releases it), or nil at the end.
func (r *spillReader) next() (arrow.RecordBatch, error) {
	if r.i >= r.r.NumRecords() {
		return nil, nil
	}
	b, err := r.r.RecordBatchAt(r.i)
	if err != nil {
		return nil, errs.Internalf("reading spill file: %v", err)
	}
	r.i++
	return b, nil
}

// close closes the file; calling it again does nothing.
func (r *spillReader) close() {
	if r.r != nil {
		_ = r.r.Close()
		_ = r.f.Close()
		r.r, r.f = nil, nil
	}
}

// isExhausted reports whether err is a refused memory reservation.
func isExhausted(err error) bool {
	return err != nil && errs.CategoryOf(err) == errs.ResourceExhausted && !errors.Is(err, errSpillFull)
}
