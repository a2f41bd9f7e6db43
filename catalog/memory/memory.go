// Package memory holds tables that live in process memory as Arrow record batches: the tables
// clients create with CREATE TABLE / INSERT, the demo table, and materialized datasets.
package memory

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	memalloc "github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

// Catalog is a mutable, concurrency-safe catalog of in-memory tables.
type Catalog struct {
	name   string
	mu     sync.RWMutex
	tables map[string]*Table // keyed by lower-case name
	// datasets are the materialized datasets, keyed by lower-case name; they share the
	// namespace of tables and views.
	datasets map[string]*Dataset
	views    map[string]string // lower-case name → query text
	// indexes maps a lower-case table name to the lower-case names of its indexes.
	indexes map[string]map[string]bool
	// triggers maps a lower-case trigger name to the lower-case name of its table.
	triggers map[string]string
}

var (
	_ catalog.MutableCatalog = (*Catalog)(nil)
	_ catalog.ViewCatalog    = (*Catalog)(nil)
	_ catalog.IndexCatalog   = (*Catalog)(nil)
	_ catalog.TriggerCatalog = (*Catalog)(nil)
)

// NewCatalog returns an empty catalog with the given name.
func NewCatalog(name string) *Catalog {
	return &Catalog{name: name, tables: map[string]*Table{}, datasets: map[string]*Dataset{}, views: map[string]string{}, indexes: map[string]map[string]bool{}, triggers: map[string]string{}}
}

// Name implements catalog.Catalog.
func (c *Catalog) Name() string { return c.name }

// Table implements catalog.Catalog. A dataset's name may carry its version ("name@<generation>"):
// it resolves only while that generation is the one held.
func (c *Catalog) Table(_ context.Context, name string) (catalog.Table, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	base, version, versioned := strings.Cut(name, "@")
	if d, ok := c.datasets[strings.ToLower(base)]; ok {
		if versioned && d.Version() != "@"+version {
			// A data node still holds the generation a replace displaced until the head drops
			// it, so reads planned before the replace finish.
			for old := d.Displaced(); old != nil; old = old.Displaced() {
				if old.Version() == "@"+version {
					return old, nil
				}
			}
			return nil, errs.NotFoundf("dataset %q@%s is no longer held: it was dropped or made again (now %s)", base, version, d.Version())
		}
		return d, nil
	}
	if versioned {
		return nil, errs.NotFoundf("table %q does not exist", name)
	}
	t, ok := c.tables[strings.ToLower(name)]
	if !ok {
		return nil, errs.NotFoundf("table %q does not exist", name)
	}
	return t, nil
}

// AttachDataset makes d resolvable by its name. A table or view of that name is an
// errs.AlreadyExists error, and so is another dataset unless replace; the dataset replaced is
// returned (nil when there was none).
func (c *Catalog) AttachDataset(d *Dataset, replace bool) (*Dataset, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := strings.ToLower(d.Name())
	if _, ok := c.tables[key]; ok {
		return nil, errs.AlreadyExistsf("table %q already exists", d.Name())
	}
	if _, ok := c.views[key]; ok {
		return nil, errs.AlreadyExistsf("a view named %q already exists", d.Name())
	}
	old, ok := c.datasets[key]
	if ok && !replace {
		return nil, errs.AlreadyExistsf("dataset %q already exists", d.Name())
	}
	c.datasets[key] = d
	return old, nil
}

// Dataset returns the dataset held under name, if any.
func (c *Catalog) Dataset(name string) (*Dataset, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, ok := c.datasets[strings.ToLower(name)]
	return d, ok
}

// Datasets lists the datasets, by name.
func (c *Catalog) Datasets() []*Dataset {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Dataset, 0, len(c.datasets))
	for _, d := range c.datasets {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// DetachDataset removes the dataset of that name if it is generation gen (any generation when
// gen is 0) and reports whether it did. Scans planned before keep their batches alive.
func (c *Catalog) DetachDataset(name string, gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := strings.ToLower(name)
	d, ok := c.datasets[key]
	if !ok || (gen != 0 && d.Generation() != gen) {
		return false
	}
	delete(c.datasets, key)
	return true
}

// TableNames implements catalog.Catalog.
func (c *Catalog) TableNames(context.Context) ([]string, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	names := make([]string, 0, len(c.tables))
	for _, t := range c.tables {
		names = append(names, t.name)
	}
	for _, d := range c.datasets {
		names = append(names, d.name)
	}
	sort.Strings(names)
	return names, nil
}

// CreateTable implements catalog.MutableCatalog. The table has no keys.
func (c *Catalog) CreateTable(ctx context.Context, name string, schema *arrow.Schema, ifNotExists bool) (catalog.Table, error) {
	return c.CreateKeyedTable(ctx, name, schema, nil, ifNotExists)
}

// CreateKeyedTable creates an empty table whose writes keep keys (PRIMARY KEY and UNIQUE)
// unique; see Key. It fails with errs.InvalidInput when the keys do not fit the schema, and with
// errs.AlreadyExists when the name is taken, unless ifNotExists and a table has it: then that
// table is returned unchanged, whatever its keys.
func (c *Catalog) CreateKeyedTable(_ context.Context, name string, schema *arrow.Schema, keys []Key, ifNotExists bool) (catalog.Table, error) {
	if err := validateKeys(schema, keys); err != nil {
		return nil, fmt.Errorf("table %q: %w", name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := strings.ToLower(name)
	if t, ok := c.tables[key]; ok {
		if ifNotExists {
			return t, nil
		}
		return nil, errs.AlreadyExistsf("table %q already exists", name)
	}
	if _, ok := c.datasets[key]; ok {
		return nil, errs.AlreadyExistsf("a dataset named %q already exists", name)
	}
	if _, ok := c.views[key]; ok {
		return nil, errs.AlreadyExistsf("a view named %q already exists", name)
	}
	t := &Table{name: name, schema: schema, keys: copyKeys(keys)}
	if len(keys) > 0 {
		t.index = newKeyIndex(orderKeys(t.keys))
	}
	c.tables[key] = t
	return t, nil
}

// DropTable implements catalog.MutableCatalog. Readers that already planned a scan of the table
// keep their batches alive through their own references.
func (c *Catalog) DropTable(_ context.Context, name string, ifExists bool) error {
	c.mu.Lock()
	key := strings.ToLower(name)
	if _, ok := c.datasets[key]; ok {
		delete(c.datasets, key)
		c.mu.Unlock()
		return nil
	}
	_, ok := c.tables[key]
	if ok {
		delete(c.tables, key)
		delete(c.indexes, key)
		for trigger, table := range c.triggers {
			if table == key {
				delete(c.triggers, trigger)
			}
		}
	}
	c.mu.Unlock()
	if !ok {
		if ifExists {
			return nil
		}
		return errs.NotFoundf("table %q does not exist", name)
	}
	return nil
}

// View implements catalog.ViewCatalog.
func (c *Catalog) View(_ context.Context, name string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	q, ok := c.views[strings.ToLower(name)]
	return q, ok
}

// CreateView implements catalog.ViewCatalog.
func (c *Catalog) CreateView(_ context.Context, name, query string, orReplace bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := strings.ToLower(name)
	if _, ok := c.tables[key]; ok {
		return errs.AlreadyExistsf("a table named %q already exists", name)
	}
	if _, ok := c.datasets[key]; ok {
		return errs.AlreadyExistsf("a dataset named %q already exists", name)
	}
	if _, ok := c.views[key]; ok && !orReplace {
		return errs.AlreadyExistsf("view %q already exists", name)
	}
	c.views[key] = query
	return nil
}

// DropView implements catalog.ViewCatalog.
func (c *Catalog) DropView(_ context.Context, name string, ifExists bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := strings.ToLower(name)
	if _, ok := c.views[key]; !ok {
		if ifExists {
			return nil
		}
		return errs.NotFoundf("view %q does not exist", name)
	}
	delete(c.views, key)
	return nil
}

// CreateTrigger implements catalog.TriggerCatalog.
func (c *Catalog) CreateTrigger(_ context.Context, name, table string, ifNotExists bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := strings.ToLower(table)
	if _, ok := c.tables[key]; !ok {
		return errs.NotFoundf("table %q does not exist", table)
	}
	if _, ok := c.triggers[strings.ToLower(name)]; ok {
		if ifNotExists {
			return nil
		}
		return errs.AlreadyExistsf("Trigger %q already exists", name)
	}
	c.triggers[strings.ToLower(name)] = key
	return nil
}

// DropTrigger implements catalog.TriggerCatalog.
func (c *Catalog) DropTrigger(_ context.Context, name string, ifExists bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.triggers[strings.ToLower(name)]; !ok {
		if ifExists {
			return nil
		}
		return errs.NotFoundf("Trigger %q does not exist", name)
	}
	delete(c.triggers, strings.ToLower(name))
	return nil
}

// CreateIndex implements catalog.IndexCatalog.
func (c *Catalog) CreateIndex(_ context.Context, table, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := strings.ToLower(table)
	if _, ok := c.tables[key]; !ok {
		return errs.NotFoundf("table %q does not exist", table)
	}
	if c.indexes[key][strings.ToLower(name)] {
		return errs.AlreadyExistsf("index %q on table %q already exists", name, table)
	}
	if c.indexes[key] == nil {
		c.indexes[key] = map[string]bool{}
	}
	c.indexes[key][strings.ToLower(name)] = true
	return nil
}

// DropIndex implements catalog.IndexCatalog. An empty table name drops the index from
// whichever table has it (DROP INDEX name without ON).
func (c *Catalog) DropIndex(_ context.Context, table, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	idx := strings.ToLower(name)
	for key, names := range c.indexes {
		if (table == "" || key == strings.ToLower(table)) && names[idx] {
			delete(names, idx)
			return nil
		}
	}
	if table != "" {
		if _, ok := c.tables[strings.ToLower(table)]; !ok {
			return errs.NotFoundf("table %q does not exist", table)
		}
		return errs.NotFoundf("index %q on table %q does not exist", name, table)
	}
	return errs.NotFoundf("index %q does not exist", name)
}

// Table is an in-memory table. Batches are immutable once added, so a scan pins the table's
// state by copying the slice of batches it saw; writes that remove rows build a new slice. The
// table holds one reference to each batch for its whole life; a dropped table's batches are
// left to the garbage collector rather than released, because planned scans may still read
// them. A table with keys checks every write against its key index (see Insert and Replace).
type Table struct {
	name    string
	schema  *arrow.Schema
	keys    []Key // as declared; fixed at creation
	mu      sync.RWMutex
	batches []arrow.RecordBatch
	rows    int64
	index   *keyIndex // nil without keys; guarded by mu
}

var _ catalog.ReplaceableTable = (*Table)(nil)

// Name implements catalog.Table.
func (t *Table) Name() string { return t.name }

// Schema implements catalog.Table.
func (t *Table) Schema() *arrow.Schema { return t.schema }

// Keys returns a copy of the table's keys as declared at creation (nil when it has none).
func (t *Table) Keys() []Key { return copyKeys(t.keys) }

// NumRows is the number of rows appended so far.
func (t *Table) NumRows() int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.rows
}

// Append implements catalog.InsertableTable: Insert of one batch, failing on a duplicate key.
func (t *Table) Append(ctx context.Context, batch arrow.RecordBatch) error {
	_, err := t.Insert(ctx, []arrow.RecordBatch{batch}, ConflictError)
	return err
}

// Replace implements catalog.ReplaceableTable. Every batch must have the table's schema. On a
// table with keys the new contents must keep them: a NULL primary key value or a repeated key
// value fails the call and leaves the table unchanged.
func (t *Table) Replace(_ context.Context, batches []arrow.RecordBatch) error {
	var rows int64
	kept := make([]arrow.RecordBatch, 0, len(batches))
	for _, b := range batches {
		if !b.Schema().Equal(t.schema) {
			return errs.Invalidf("batch schema %s does not match table %q schema %s", b.Schema(), t.name, t.schema)
		}
		if b.NumRows() > 0 {
			kept = append(kept, b)
			rows += b.NumRows()
		}
	}
	var index *keyIndex
	if len(t.keys) > 0 {
		var err error
		if index, err = buildKeyIndex(t.name, t.schema, orderKeys(t.keys), kept); err != nil {
			return err
		}
	}
	for _, b := range kept {
		b.Retain()
	}
	t.mu.Lock()
	t.batches, t.rows, t.index = kept, rows, index
	t.mu.Unlock()
	return nil
}

const (
	// compactBelow is the row count under which a batch counts as small: tables filled by
	// many one-row INSERTs would otherwise make every scan pay per-batch overhead per row.
	compactBelow = 1024
	// compactTarget is the most rows a batch merged from small ones gets.
	compactTarget = 8192
)

// compactLocked merges runs of consecutive small batches into batches of up to compactTarget
// rows. Row order is kept. Scans planned earlier keep the batches they hold. t.mu is held.
func (t *Table) compactLocked() {
	small := 0
	for _, b := range t.batches {
		if b.NumRows() < compactBelow {
			small++
		}
	}
	if small < 2 {
		return
	}
	out := make([]arrow.RecordBatch, 0, len(t.batches))
	var run []arrow.RecordBatch
	var runRows int64
	flush := func() bool {
		defer func() { run, runRows = nil, 0 }()
		if len(run) <= 1 {
			out = append(out, run...)
			return true
		}
		merged, err := concatBatches(t.schema, run)
		if err != nil {
			return false
		}
		out = append(out, merged)
		return true
	}
	for _, b := range t.batches {
		if b.NumRows() >= compactBelow || runRows+b.NumRows() > compactTarget {
			if !flush() {
				return
			}
		}
		if b.NumRows() >= compactBelow {
			out = append(out, b)
			continue
		}
		run = append(run, b)
		runRows += b.NumRows()
	}
	if !flush() {
		return
	}
	t.batches = out
}

// concatBatches joins batches of one schema into one batch.
func concatBatches(schema *arrow.Schema, batches []arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, schema.NumFields())
	var rows int64
	for _, b := range batches {
		rows += b.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(batches))
		for j, b := range batches {
			parts[j] = b.Column(i)
		}
		c, err := array.Concatenate(parts, memalloc.DefaultAllocator)
		if err != nil {
			for _, done := range cols[:i] {
				done.Release()
			}
			return nil, err
		}
		cols[i] = c
	}
	rec := array.NewRecordBatch(schema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}

// batchesPerTask bounds the work of one scan task so that large tables scan in parallel.
const batchesPerTask = 16

// Scan implements catalog.Table. Each task covers up to batchesPerTask consecutive batches.
func (t *Table) Scan(_ context.Context, req catalog.ScanRequest) (*catalog.ScanPlan, error) {
	cols := req.Columns
	if cols == nil {
		cols = make([]int, t.schema.NumFields())
		for i := range cols {
			cols[i] = i
		}
	}
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		if c < 0 || c >= t.schema.NumFields() {
			return nil, errs.Internalf("scan of %q asks for column %d of %d", t.name, c, t.schema.NumFields())
		}
		fields[i] = t.schema.Field(c)
	}
	out := arrow.NewSchema(fields, nil)

	t.mu.Lock()
	t.compactLocked()
	var tasks []catalog.ScanTask
	for start := 0; start < len(t.batches); start += batchesPerTask {
		end := min(start+batchesPerTask, len(t.batches))
		task := &scanTask{schema: out, cols: cols, limit: req.Limit}
		task.batches = t.batches[start:end:end]
		for _, b := range task.batches {
			task.rows += b.NumRows()
		}
		tasks = append(tasks, task)
	}
	t.mu.Unlock()
	if len(tasks) == 0 {
		tasks = append(tasks, &scanTask{schema: out, cols: cols})
	}
	return &catalog.ScanPlan{Tasks: tasks}, nil
}

// scanTask reads a fixed slice of the table's batches. It may be opened any number of times
// (a correlated subquery re-executes its scan once per outer row).
type scanTask struct {
	schema  *arrow.Schema
	cols    []int
	batches []arrow.RecordBatch
	rows    int64
	limit   int64
}

func (s *scanTask) EstimatedRows() int64 { return s.rows }

func (s *scanTask) Open(_ context.Context, _ memalloc.Allocator) (array.RecordReader, error) {
	recs := make([]arrow.RecordBatch, 0, len(s.batches))
	var seen int64
	for _, b := range s.batches {
		if s.limit > 0 && seen >= s.limit {
			break
		}
		arrs := make([]arrow.Array, len(s.cols))
		for i, c := range s.cols {
			arrs[i] = b.Column(c)
		}
		recs = append(recs, array.NewRecordBatch(s.schema, arrs, b.NumRows()))
		seen += b.NumRows()
	}
	rdr, err := array.NewRecordReader(s.schema, recs)
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		return nil, errs.Internalf("memory scan: %v", err)
	}
	return rdr, nil
}
