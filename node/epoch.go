package node

import (
	"context"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/errs"
)

// epochBatchBytes is the size a segment's output batches aim at (the server splits anything
// larger than its cap).
const (
	epochBatchBytes = 2 << 20
	// epochAlignedBytes bounds the batches a reader's batch size may round a segment's batches
	// up to (a multiple of it): a larger batch size gets batches of about epochBatchBytes.
	epochAlignedBytes = 64 << 20
	// epochOrdersKept is how many epoch orders a node keeps made: the epochs its readers are
	// in (every rank and worker of a job reads the same one; a job's next epoch, another job's).
	epochOrdersKept = 8
)

// ReadEpoch produces one segment of a training read (planned by the head,
// engine.PlanEpochRead) from the partitions this process holds. A dataset generation it does not
// hold (this process started after the head planned the read, say, and the head has not yet made
// the partitions again elsewhere), a partition it does not hold, or one whose row count differs
// from the head's, fails with errs.Unavailable naming the dataset and the partitions: the reader
// should plan again shortly.
func (rt *Runtime) ReadEpoch(ctx context.Context, s engine.EpochSlice) (array.RecordReader, error) {
	if len(s.Columns) != len(s.Names) {
		return nil, errs.Invalidf("training read slice has %d columns and %d names", len(s.Columns), len(s.Names))
	}
	if err := s.Request.Reader.Validate(); err != nil {
		return nil, err
	}
	order, err := rt.epochOrders.Get(s.PartRows, s.Request.Seed, s.Request.Epoch, s.Request.Shuffle, s.Request.Mixing, s.Request.ChunkRows, s.Request.WindowRows)
	if err != nil {
		return nil, err
	}
	current, _ := rt.eng.MemoryCatalog().Dataset(s.Dataset)
	d := generationOf(current, s.Generation)
	if d == nil {
		parts, verb := partitionList(slicePartitions(s))
		return nil, errs.Unavailablef("%s of dataset %q (generation %d) %s not held by this data node: it started after the read was planned, or they are being made again; plan the read again shortly",
			parts, s.Dataset, s.Generation, verb)
	}
	for _, c := range s.Columns {
		if c < 0 || c >= d.Schema().NumFields() {
			return nil, errs.Invalidf("dataset %q has no column %d", s.Dataset, c)
		}
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
// batch (about epochBatchBytes; a multiple of batchSize when there is one of at most
// epochAlignedBytes) and gathers at once: one batch, so that the rows of the windows it picks
// from stay in cache from one column to the next (a part reads every held partition's current
// window at once). However large the reader's batches, a node gathers at most about
// epochAlignedBytes at once: a client merges or rebatches what it receives.
func epochSizes(rowBytes int64, batchSize int) (target, part int64) {
	target = max(1, epochBatchBytes/rowBytes)
	if b := int64(batchSize); b > 0 && b <= epochAlignedBytes/rowBytes {
		target = max(b, target/b*b)
	}
	return target, target
}

// slicePartitions lists the partitions whose rows segment s reads, ascending: the ones it names,
// or all of them.
func slicePartitions(s engine.EpochSlice) []int {
	if len(s.Partitions) > 0 {
		return s.Partitions
	}
	all := make([]int, len(s.PartRows))
	for p := range all {
		all[p] = p
	}
	return all
}

// partitionList names partitions ps ("partition 4", "partitions 1, 4") and the verb that
// agrees with them.
func partitionList(ps []int) (names, verb string) {
	if len(ps) == 1 {
		return "partition " + strconv.Itoa(ps[0]), "is"
	}
	parts := make([]string, len(ps))
	for i, n := range ps {
		parts[i] = strconv.Itoa(n)
	}
	return "partitions " + strings.Join(parts, ", "), "are"
}
