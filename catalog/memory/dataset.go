package memory

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	memalloc "github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

// Dataset is a materialized query result: a fixed number of partitions, each held as Arrow
// batches by one process (this one or a data node). It is a catalog.VersionedTable whose
// version, "@<generation>", names this materialization: a dataset dropped and made again under
// the same name has a new generation, so a statement pinned to the old one fails instead of
// reading different rows.
//
// On the head every partition is remote (Part.Location, read through Part.Fetch); on a data
// node the partitions it holds are local (Part.Data, in memory or on disk; readers take their
// batches with Part.Open) and the others are absent. Scans
// produce one task per partition, in partition order, on every process alike, so a divided
// query names the same partitions everywhere.
type Dataset struct {
	name   string
	gen    uint64
	schema *arrow.Schema

	mu    sync.RWMutex
	parts []Part
	// displaced is the older generation of the same name that this one replaced in a data
	// node's catalog while the head was still making this one (see Displaced).
	displaced *Dataset
	// plannedRows, when positive, is one more than the row count the head planned with
	// (SetPlannedRows); Statistics reports it instead of the partitions known here.
	plannedRows atomic.Int64
}

// SetPlannedRows makes Statistics report rows: on a data node, which holds only some partitions,
// the head's count of the whole dataset, so that the node plans a stage as the head did.
func (d *Dataset) SetPlannedRows(rows int64) {
	if rows >= 0 {
		d.plannedRows.Store(rows + 1)
	}
}

// Part is one partition of a dataset as this process knows it.
type Part struct {
	// Rows and Bytes measure the partition's batches (Bytes as held in memory).
	Rows, Bytes int64
	// Location is the Flight address of the data node holding the partition; "" when it is held
	// here (Batches).
	Location string
	// Batches are the partition's rows when held here in memory only (LocalPart). The dataset
	// owns them.
	Batches []arrow.RecordBatch
	// Data holds the partition's rows when held here in tiers (memory, disk; TieredPart).
	Data *PartData
	// Fetch reads a remote partition's columns (indexes into the dataset schema) from its
	// node; nil when this process cannot read it (a data node asked for another node's
	// partition).
	Fetch func(ctx context.Context, columns []int) (array.RecordReader, error)
	// Gone, when set, says why the partition's rows are gone for good (an ingested dataset's
	// only copy was on a data node that was lost): the dataset cannot be read (Dataset.Gone).
	Gone error
}

// Held reports whether the partition's rows are in this process (in any tier).
func (p Part) Held() bool {
	if p.Location != "" {
		return false
	}
	if p.Data != nil {
		return p.Data.Tier() != TierDropped
	}
	return p.Batches != nil
}

// Open returns the batches of a partition held here, retained, from whatever tier holds them,
// and the func that releases them (once); see PartData.Open.
func (p Part) Open(ctx context.Context) ([]arrow.RecordBatch, func(), error) {
	if p.Data != nil {
		return p.Data.Open(ctx)
	}
	if p.Location != "" || p.Batches == nil {
		return nil, nil, errs.Unavailablef("the dataset partition is not held by this process")
	}
	out := make([]arrow.RecordBatch, len(p.Batches))
	for i, b := range p.Batches {
		b.Retain()
		out[i] = b
	}
	var once sync.Once
	return out, func() { once.Do(func() { releaseBatches(out) }) }, nil
}

// TieredPart returns a Part held here in tiers by data.
func TieredPart(data *PartData) Part {
	return Part{Rows: data.Rows(), Bytes: data.Bytes(), Data: data}
}

// NewDataset returns a dataset of the given number of partitions, none of them held anywhere yet.
func NewDataset(name string, gen uint64, schema *arrow.Schema, partitions int) *Dataset {
	return &Dataset{name: name, gen: gen, schema: schema, parts: make([]Part, partitions)}
}

// LocalPart returns a Part holding batches, measured.
func LocalPart(batches []arrow.RecordBatch) Part {
	p := Part{Batches: batches}
	if p.Batches == nil {
		p.Batches = []arrow.RecordBatch{}
	}
	for _, b := range batches {
		p.Rows += b.NumRows()
		p.Bytes += util.TotalRecordSize(b)
	}
	return p
}

func (d *Dataset) Name() string          { return d.name }
func (d *Dataset) Schema() *arrow.Schema { return d.schema }

// Generation identifies this materialization of the dataset's name.
func (d *Dataset) Generation() uint64 { return d.gen }

// Version implements catalog.VersionedTable.
func (d *Dataset) Version() string { return "@" + strconv.FormatUint(d.gen, 10) }

// NumPartitions is the dataset's fixed partition count.
func (d *Dataset) NumPartitions() int { return len(d.parts) }

// SetPart records where partition i is and what it holds, replacing what was known.
func (d *Dataset) SetPart(i int, p Part) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i < 0 || i >= len(d.parts) {
		return errs.Invalidf("dataset %q has %d partitions, not %d", d.name, len(d.parts), i+1)
	}
	d.parts[i] = p
	return nil
}

// Displaced returns the older generation this one replaced in this process's catalog and that
// is still kept (nil for none). A data node keeps it until the head drops it for good, so that
// the head can still read it while it makes this one, and so that it is current again when
// making this one fails.
func (d *Dataset) Displaced() *Dataset {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.displaced
}

// SetDisplaced records (or, with nil, forgets) the older generation this one replaced.
func (d *Dataset) SetDisplaced(old *Dataset) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.displaced = old
}

// Parts returns what is known of each partition.
func (d *Dataset) Parts() []Part {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return append([]Part(nil), d.parts...)
}

// Totals sums the rows and bytes of the partitions known so far.
func (d *Dataset) Totals() (rows, bytes int64) {
	for _, p := range d.Parts() {
		rows += p.Rows
		bytes += p.Bytes
	}
	return rows, bytes
}

// Gone returns the error of the first partition whose rows are gone for good (Part.Gone), nil
// when none is: a dataset with such a partition cannot be read whole, so it is not read at all.
func (d *Dataset) Gone() error {
	for _, p := range d.Parts() {
		if p.Gone != nil {
			return p.Gone
		}
	}
	return nil
}

// Scan implements catalog.Table: one task per partition. A task reads its partition's batches
// when they are held here and fetches them from their node otherwise; a task of a partition this
// process can do neither for fails with errs.Unavailable when opened. A dataset with a partition
// gone for good (Gone) fails to scan with that partition's error.
func (d *Dataset) Scan(_ context.Context, req catalog.ScanRequest) (*catalog.ScanPlan, error) {
	if err := d.Gone(); err != nil {
		return nil, err
	}
	cols := req.Columns
	if cols == nil {
		cols = make([]int, d.schema.NumFields())
		for i := range cols {
			cols[i] = i
		}
	}
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		if c < 0 || c >= d.schema.NumFields() {
			return nil, errs.Internalf("scan of dataset %q asks for column %d of %d", d.name, c, d.schema.NumFields())
		}
		fields[i] = d.schema.Field(c)
	}
	out := arrow.NewSchema(fields, nil)
	parts := d.Parts()
	tasks := make([]catalog.ScanTask, len(parts))
	for i, p := range parts {
		tasks[i] = &datasetTask{dataset: d.name, index: i, part: p, schema: out, cols: cols, limit: req.Limit}
	}
	return &catalog.ScanPlan{Tasks: tasks, Explain: fmt.Sprintf("generation=%d", d.gen)}, nil
}

// datasetTask reads one partition of a dataset.
type datasetTask struct {
	dataset string
	index   int
	part    Part
	schema  *arrow.Schema
	cols    []int
	limit   int64
}

func (t *datasetTask) EstimatedRows() int64  { return t.part.Rows }
func (t *datasetTask) EstimatedBytes() int64 { return max(t.part.Bytes, 1) }
func (t *datasetTask) Location() string      { return t.part.Location }

func (t *datasetTask) Open(ctx context.Context, mem memalloc.Allocator) (array.RecordReader, error) {
	if t.part.Held() {
		batches, release, err := t.part.Open(ctx)
		if err != nil {
			return nil, fmt.Errorf("partition %d of dataset %q: %w", t.index, t.dataset, err)
		}
		// The reader retains what it reads (and so keeps a mapped file mapped): the batches are
		// released as soon as it is made.
		defer release()
		local := &scanTask{schema: t.schema, cols: t.cols, batches: batches, rows: t.part.Rows, limit: t.limit}
		return local.Open(ctx, mem)
	}
	if t.part.Location != "" && t.part.Fetch != nil {
		return t.part.Fetch(ctx, t.cols)
	}
	where := "is not held by this node"
	if t.part.Location != "" {
		where = "is held by data node " + t.part.Location
	}
	return nil, errs.Unavailablef("partition %d of dataset %q %s; plan the query again to read it where it is", t.index, t.dataset, where)
}
