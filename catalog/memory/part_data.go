package memory

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/util"

	"github.com/cachedb/cachedb/internal/errs"
)

// Tier says where this process holds a partition's rows.
type Tier string

const (
	// TierMemory: Arrow batches in the process's memory.
	TierMemory Tier = "memory"
	// TierDisk: an Arrow IPC file on local disk, mapped into memory (read through the page cache).
	TierDisk Tier = "disk"
	// TierEvicted: in neither; the partition is made again from its source when next read
	// (PartData.SetReload), or the read fails with errs.ResourceExhausted.
	TierEvicted Tier = "evicted"
	// TierDropped: dropped for good.
	TierDropped Tier = "dropped"
)

// PartData is one partition's rows held by this process, in memory or in a mapped file on
// disk (the tiers). Readers take its batches with Open, whatever tier serves them, and give them
// back with the release func Open returns; a move to disk or a drop while a reader holds them
// does not invalidate what it holds (Arrow reference counts keep the memory, or the mapping, alive
// until the last array from it is released). It is safe for concurrent use.
type PartData struct {
	schema      *arrow.Schema
	rows, bytes int64
	now         func() time.Time

	mu        sync.Mutex
	tier      Tier
	batches   []arrow.RecordBatch
	path      string
	diskBytes int64
	reads     int64
	lastRead  time.Time

	// reload makes the rows again after an eviction; reloadMu makes one reader do it.
	reload   func(context.Context) error
	reloadMu sync.Mutex

	// mappings counts the file mappings not yet unmapped.
	mappings atomic.Int64
}

// NewPartData holds batches (of schema; it takes their references) in memory, measured.
func NewPartData(schema *arrow.Schema, batches []arrow.RecordBatch) *PartData {
	d := &PartData{schema: schema, tier: TierMemory, batches: batches, now: time.Now}
	d.rows, d.bytes = measure(batches)
	if d.batches == nil {
		d.batches = []arrow.RecordBatch{}
	}
	return d
}

func measure(batches []arrow.RecordBatch) (rows, bytes int64) {
	for _, b := range batches {
		rows += b.NumRows()
		bytes += util.TotalRecordSize(b)
	}
	return rows, bytes
}

// SetClock replaces the clock that stamps reads (tests).
func (d *PartData) SetClock(now func() time.Time) { d.now = now }

// SetReload installs what makes an evicted partition's rows again (it must call Restore, or
// ToDisk's counterpart, before returning nil). Without one, reading an evicted partition fails.
func (d *PartData) SetReload(reload func(context.Context) error) {
	d.mu.Lock()
	d.reload = reload
	d.mu.Unlock()
}

// Rows and Bytes measure the partition (Bytes as Arrow batches in memory).
func (d *PartData) Rows() int64  { return d.rows }
func (d *PartData) Bytes() int64 { return d.bytes }

// Schema is the schema of the partition's batches.
func (d *PartData) Schema() *arrow.Schema { return d.schema }

// PartStats describe a PartData now.
type PartStats struct {
	Tier                   Tier
	Rows, Bytes, DiskBytes int64
	Reads                  int64
	// LastRead is zero when the partition was never read.
	LastRead time.Time
}

// Stats returns what the partition is now.
func (d *PartData) Stats() PartStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return PartStats{Tier: d.tier, Rows: d.rows, Bytes: d.bytes, DiskBytes: d.diskBytes, Reads: d.reads, LastRead: d.lastRead}
}

// Tier is where the rows are now.
func (d *PartData) Tier() Tier {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.tier
}

// Mappings counts the partition's file mappings that are not unmapped yet (one while it is on
// disk, more while readers still hold batches of a file it no longer uses).
func (d *PartData) Mappings() int64 { return d.mappings.Load() }

// Open returns the partition's batches, retained, and the func that releases them; it counts a
// read. An evicted partition is made again first (SetReload), by one reader while the others
// wait; without a reload it fails with errs.ResourceExhausted.
func (d *PartData) Open(ctx context.Context) ([]arrow.RecordBatch, func(), error) {
	for {
		d.mu.Lock()
		switch d.tier {
		case TierMemory, TierDisk:
			out := make([]arrow.RecordBatch, len(d.batches))
			for i, b := range d.batches {
				b.Retain()
				out[i] = b
			}
			d.reads++
			d.lastRead = d.now()
			d.mu.Unlock()
			var once sync.Once
			return out, func() { once.Do(func() { releaseBatches(out) }) }, nil
		case TierDropped:
			d.mu.Unlock()
			return nil, nil, errs.Unavailablef("the dataset partition was dropped from this node")
		}
		reload := d.reload
		d.mu.Unlock()
		if reload == nil {
			return nil, nil, errs.Exhaustedf("the dataset partition was evicted from this node's memory and disk (both full) and cannot be made again here; raise --memory-limit or --disk-limit, or load the dataset again")
		}
		if err := d.reloadOnce(ctx, reload); err != nil {
			return nil, nil, err
		}
	}
}

// reloadOnce runs reload unless another reader made the rows again meanwhile.
func (d *PartData) reloadOnce(ctx context.Context, reload func(context.Context) error) error {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	if d.Tier() != TierEvicted {
		return nil
	}
	return reload(ctx)
}

// Restore holds batches (the partition made again after an eviction; their references are
// taken) in memory. It fails, releasing them, when they are not the partition's rows any more or
// the partition is not evicted.
func (d *PartData) Restore(batches []arrow.RecordBatch) error {
	rows, _ := measure(batches)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tier != TierEvicted || rows != d.rows {
		releaseBatches(batches)
		if d.tier != TierEvicted {
			return nil
		}
		return errs.Internalf("a dataset partition made again has %d rows, not its %d", rows, d.rows)
	}
	d.batches, d.tier = batches, TierMemory
	return nil
}

// RestoreToDisk is Restore through the disk tier: batches are written to path and read from
// there (their references are released).
func (d *PartData) RestoreToDisk(batches []arrow.RecordBatch, path string) (int64, error) {
	defer releaseBatches(batches)
	if rows, _ := measure(batches); rows != d.rows {
		return 0, errs.Internalf("a dataset partition made again has %d rows, not its %d", rows, d.rows)
	}
	return d.toDisk(batches, path, TierEvicted)
}

// ToDisk moves the partition from memory to an Arrow IPC file at path (which must not exist),
// mapped for reading, and returns the file's size. Readers holding the in-memory batches keep
// them. It fails, holding the partition as it was, when it is not in memory or the file cannot
// be written.
func (d *PartData) ToDisk(path string) (int64, error) {
	d.mu.Lock()
	if d.tier != TierMemory {
		d.mu.Unlock()
		return 0, errs.Internalf("the dataset partition is %s, not in memory", d.tier)
	}
	batches := d.batches
	for _, b := range batches {
		b.Retain()
	}
	d.mu.Unlock()
	defer releaseBatches(batches)
	return d.toDisk(batches, path, TierMemory)
}

// toDisk writes batches to path and, if the partition is still in tier from, holds it there.
func (d *PartData) toDisk(batches []arrow.RecordBatch, path string, from Tier) (int64, error) {
	size, err := writePartFile(path, d.schema, batches)
	if err != nil {
		return 0, err
	}
	d.mappings.Add(1)
	mapped, err := mapPartFile(path, d.schema, func() { d.mappings.Add(-1) })
	if err != nil {
		d.mappings.Add(-1)
		_ = os.Remove(path)
		return 0, err
	}
	d.mu.Lock()
	if d.tier != from {
		// Dropped (or moved by another caller) meanwhile.
		dropped := d.tier == TierDropped
		d.mu.Unlock()
		releaseBatches(mapped)
		_ = os.Remove(path)
		if dropped {
			return 0, errs.Unavailablef("the dataset partition was dropped from this node")
		}
		return 0, errs.Internalf("the dataset partition changed tier while it was written to disk")
	}
	old := d.batches
	d.batches, d.tier, d.path, d.diskBytes = mapped, TierDisk, path, size
	d.mu.Unlock()
	releaseBatches(old)
	return size, nil
}

// Evict drops the partition's file from disk (it must be on disk): it is TierEvicted after,
// made again when next read. It returns the bytes the file held.
func (d *PartData) Evict() int64 {
	d.mu.Lock()
	if d.tier != TierDisk {
		d.mu.Unlock()
		return 0
	}
	old, path, size := d.batches, d.path, d.diskBytes
	d.batches, d.tier, d.path, d.diskBytes = nil, TierEvicted, "", 0
	d.mu.Unlock()
	releaseBatches(old)
	_ = os.Remove(path)
	return size
}

// Drop frees the partition for good, in whatever tier it is, and removes its file. The mapping
// of a file ends once readers have released what they hold of it.
func (d *PartData) Drop() {
	d.mu.Lock()
	old, path := d.batches, d.path
	d.batches, d.tier, d.path, d.diskBytes, d.reload = nil, TierDropped, "", 0, nil
	d.mu.Unlock()
	releaseBatches(old)
	if path != "" {
		_ = os.Remove(path)
	}
}
