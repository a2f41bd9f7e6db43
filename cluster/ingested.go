package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/util"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/metrics"
)

// IngestJob describes a dataset made of rows a client sent (Flight SQL bulk ingest): no query
// makes them, so the head hands each partition's rows to the node that holds it, and nothing
// can make a partition again.
type IngestJob struct {
	Name string
	// Replace swaps out a dataset of the same name (however it was made) once the new one is
	// complete; without it, a dataset of that name is an errs.AlreadyExists error.
	Replace bool
	// Replaces, when not 0, is the generation the dataset must still be at when the new one is
	// complete (an append holds its rows and new ones): otherwise the ingest fails, changing
	// nothing, with errs.Unavailable.
	Replaces uint64
	// Schema is the schema the dataset holds; every batch of Parts has it.
	Schema *arrow.Schema
	// Parts are the rows of each partition, in order (at least one partition; a partition may
	// have no batch). The caller keeps them: Ingest has sent them all when it returns.
	Parts [][]arrow.RecordBatch
	// Source describes the dataset for system.datasets.
	Source string
	// Pin is PinMemory to keep the partitions in memory.
	Pin string
}

// Ingest makes the dataset job describes on the data nodes and attaches it to the catalog, all
// or nothing: every partition is placed as Create places a query's (schedule.Scheduler.Plan)
// and handed to its node (a store call); a partition whose node fails or is lost while the
// ingest runs goes to another node; when one cannot be placed, what was sent is dropped and the
// catalog is unchanged (a dataset replaced is still there). progress (may be nil) is called
// after each partition is held.
//
// Durability: each partition is held by one node. Once Ingest returns, nothing can make a
// partition again: when the node holding one is lost, the dataset is lost (system.datasets
// state "lost", and every read of it fails with errs.DataLoss naming the partition and the
// node) until it is dropped, or until that very process registers again (it was only cut off
// and still holds the rows). Partitions are never evicted by the nodes' tiers (they may move to
// a node's disk).
func (d *Datasets) Ingest(ctx context.Context, job IngestJob, progress func(Progress)) (_ DatasetInfo, err error) {
	if len(job.Parts) == 0 || job.Schema == nil {
		return DatasetInfo{}, errs.Internalf("ingested dataset %q has no partitions or no schema", job.Name)
	}
	defer func() { metrics.DatasetLoad(metrics.Outcome(err)) }()
	if err := d.nameFree(ctx, job.Name, job.Replace, errs.AlreadyExistsf("Dataset '%s' already exists", job.Name)); err != nil {
		return DatasetInfo{}, err
	}
	bytes := make([]int64, len(job.Parts))
	specs := make([]PartSpec, len(job.Parts))
	for i, part := range job.Parts {
		for _, b := range part {
			bytes[i] += util.TotalRecordSize(b)
		}
		specs[i] = PartSpec{Bytes: bytes[i]}
	}
	now := time.Now()
	d.mu.Lock()
	key := d.sched.Add(job.Name, now, bytes)
	e := &datasetEntry{
		key: key, ds: memcat.NewDataset(job.Name, key.Generation, job.Schema, len(job.Parts)), created: now,
		job: DatasetJob{
			Name: job.Name, Replace: job.Replace, Fingerprint: ingestFingerprint(key.Name, key.Generation),
			ResultSchema: job.Schema, Parts: specs, Source: job.Source, Pin: job.Pin,
		},
		rows: job.Parts, ingested: true,
	}
	d.entries[key] = e
	d.mu.Unlock()
	if err := d.makeIngested(ctx, e, progressOf(len(job.Parts), progress)); err != nil {
		d.discard(e)
		return DatasetInfo{}, fmt.Errorf("ingesting dataset %q: %w", job.Name, err)
	}
	d.mu.Lock()
	if cur, ok := d.cfg.Catalog.Dataset(job.Name); job.Replaces != 0 && (!ok || cur.Generation() != job.Replaces) {
		d.mu.Unlock()
		d.discard(e)
		return DatasetInfo{}, errs.Unavailablef("dataset %q was replaced or dropped while rows were appended to it; nothing was appended: ingest again", job.Name)
	}
	replaced, err := d.attachLocked(e, job.Replace)
	e.rows = nil
	info := d.infoLocked(e)
	d.mu.Unlock()
	if err != nil {
		d.discard(e)
		return DatasetInfo{}, err
	}
	if replaced != nil {
		d.dropOnNodes(replaced)
	}
	d.cfg.Logger.Info("dataset ingested", "dataset", job.Name, "generation", key.Generation, "partitions", info.Partitions, "rows", info.Rows, "bytes", info.Bytes, "nodes", info.Nodes)
	return info, nil
}

// makeIngested drives e until every partition is held, making again (from the rows it still
// has) those of a node lost meanwhile, then fixes it (schedule.Scheduler.Fix) in the same step
// as the drive ends: from then on a loss loses partitions instead of waiting for a rebuild.
func (d *Datasets) makeIngested(ctx context.Context, e *datasetEntry, done func(PartitionStats)) error {
	for {
		if err := d.make(ctx, e, done); err != nil {
			return err
		}
		d.mu.Lock()
		again := d.sched.Release(e.key)
		if !again {
			d.sched.Fix(e.key)
		}
		d.mu.Unlock()
		if !again {
			return nil
		}
	}
}

// ingestFingerprint identifies one ingested generation: no query plan has it, so no query is
// answered from the dataset in its place, and a training order keyed on it (EpochOrderKey)
// belongs to these rows only.
func ingestFingerprint(name string, generation uint64) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "ingest\x00%s\x00%d", name, generation))
	return hex.EncodeToString(sum[:8])
}

// lostPartition is the error of reading an ingested dataset whose partition p was held only by
// data node node, which was lost.
func lostPartition(dataset string, p int, node string) error {
	return errs.DataLossf("dataset %q was ingested and its partition %d was held only by data node %s, which was lost: those rows are gone (bulk-ingested rows have no source to make them from again); DROP TABLE %s and ingest it again", dataset, p, node, dataset)
}
