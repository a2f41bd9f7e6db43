package node

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/rpcerr"
)

var _ cluster.RowStore = (*Runtime)(nil)

// StorePartition implements cluster.RowStore: it holds the batches the head sends as one
// partition of an ingested dataset, under the dataset's name at its generation, as Materialize
// holds a partition it made. Nothing can make such a partition again, so the tiers never evict
// it (it may move to disk unless pinned to memory); a partition that fits neither is refused
// with errs.ResourceExhausted and nothing is held. It stops when ctx ends or the runtime closes.
func (rt *Runtime) StorePartition(ctx context.Context, req cluster.StoreRequest, rdr array.RecordReader) (cluster.PartitionStats, error) {
	ctx, end, err := rt.partitionWork(ctx, req.Partition, req.Partitions)
	if err != nil {
		return cluster.PartitionStats{}, err
	}
	defer end()
	batches, err := receiveBatches(ctx, rdr)
	if err != nil {
		return cluster.PartitionStats{}, err
	}
	data := memcat.NewPartData(rdr.Schema(), packPartition(batches, rt.alloc))
	ds, err := rt.heldDataset(cluster.MaterializeRequest{Dataset: req.Dataset, Generation: req.Generation, Partitions: req.Partitions, Partition: req.Partition}, rdr.Schema())
	if err != nil {
		data.Drop()
		return cluster.PartitionStats{}, err
	}
	if ds.NumPartitions() != req.Partitions || !ds.Schema().Equal(rdr.Schema()) {
		data.Drop()
		return cluster.PartitionStats{}, errs.Invalidf("dataset %q generation %d has %d partitions of schema %s; this partition says %d of %s",
			req.Dataset, req.Generation, ds.NumPartitions(), ds.Schema(), req.Partitions, rdr.Schema())
	}
	h := &heldPart{owner: rt, dataset: req.Dataset, gen: req.Generation, index: req.Partition, data: data, pinned: req.Pin == cluster.PinMemory, noSource: true}
	if err := rt.tiers.hold(h); err != nil {
		return cluster.PartitionStats{}, err
	}
	old := ds.Parts()[req.Partition]
	if err := ds.SetPart(req.Partition, memcat.TieredPart(data)); err != nil {
		rt.tiers.release(data)
		return cluster.PartitionStats{}, err
	}
	rt.releasePart(old)
	return cluster.PartitionStats{Rows: data.Rows(), Bytes: data.Bytes()}, nil
}

// receiveBatches reads rdr to its end, keeping its non-empty batches (retained). On any error,
// ctx's end included, nothing is kept.
func receiveBatches(ctx context.Context, rdr array.RecordReader) ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	for rdr.Next() {
		if err := context.Cause(ctx); err != nil {
			releaseAll(out)
			return nil, err
		}
		b := rdr.RecordBatch()
		if b.NumRows() == 0 {
			continue
		}
		b.Retain()
		out = append(out, b)
	}
	if err := rdr.Err(); err != nil {
		releaseAll(out)
		return nil, fmt.Errorf("reading the partition's batches: %w", rpcerr.FromStatus(err))
	}
	if err := context.Cause(ctx); err != nil {
		releaseAll(out)
		return nil, err
	}
	return out, nil
}
