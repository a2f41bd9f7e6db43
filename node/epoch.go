package node

import (
	"context"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/array"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/errs"
)

// epochBatchBytes is the size a segment's output batches aim at (the server splits anything
// larger than its cap); epochGatherBytes bounds what a reader gathers at once.
const (
	epochBatchBytes  = 2 << 20
	epochGatherBytes = 32 << 20
)

// ReadEpoch produces one segment of a training read (planned by the head,
// engine.PlanEpochRead) from the partitions this process holds. A partition it does not hold,
// or one whose row count differs from the head's, fails with errs.Unavailable: the reader
// should plan again.
func (rt *Runtime) ReadEpoch(ctx context.Context, s engine.EpochSlice) (array.RecordReader, error) {
	t, err := rt.eng.MemoryCatalog().Table(ctx, s.Dataset+"@"+strconv.FormatUint(s.Generation, 10))
	if err != nil {
		return nil, err
	}
	d, ok := t.(*memcat.Dataset)
	if !ok {
		return nil, errs.NotFoundf("%q is not a dataset", s.Dataset)
	}
	if len(s.Columns) != len(s.Names) {
		return nil, errs.Invalidf("training read slice has %d columns and %d names", len(s.Columns), len(s.Names))
	}
	for _, c := range s.Columns {
		if c < 0 || c >= d.Schema().NumFields() {
			return nil, errs.Invalidf("dataset %q has no column %d", s.Dataset, c)
		}
	}
	if err := s.Request.Reader.Validate(); err != nil {
		return nil, err
	}
	order, err := cluster.NewEpochOrder(s.PartRows, s.Request.Seed, s.Request.Epoch, s.Request.Shuffle, s.Request.ChunkRows, s.Request.WindowRows)
	if err != nil {
		return nil, err
	}
	parts := d.Parts()
	if len(parts) != len(s.PartRows) {
		return nil, errs.Invalidf("dataset %q has %d partitions, the read expects %d", s.Dataset, len(parts), len(s.PartRows))
	}
	schema := engine.EpochSchema(d.Schema(), s.Columns, s.Names)
	var rowBytes int64 = 1
	if rows, bytes := d.Totals(); rows > 0 {
		rowBytes = max(1, bytes/rows*int64(len(s.Columns))/int64(max(1, d.Schema().NumFields())))
	}
	target, part := epochSizes(rowBytes, s.Request.Reader.BatchSize)
	return newEpochReader(ctx, rt.taskContext(), rt.epochBuffers, s, order, parts, schema, target, part)
}

// epochSizes returns, for rows of about rowBytes bytes, how many rows a reader streams in a
// batch (about epochBatchBytes; a multiple of batchSize when there is one) and gathers at once
// (about epochGatherBytes; a multiple of the batch).
func epochSizes(rowBytes int64, batchSize int) (target, part int64) {
	target = max(1, epochBatchBytes/rowBytes)
	if b := int64(batchSize); b > 0 {
		target = max(b, target/b*b)
	}
	return target, max(target, epochGatherBytes/rowBytes/target*target)
}
