package exec

import (
	"context"
	"fmt"
	"hash/maphash"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/stream"
)

// Hash aggregate memory and spilling
//
// A hash aggregate reserves what its groups hold (heldBytes: keys, table entries, states) from
// the query's memory after each input batch. When that is refused:
//
//   - If every aggregate has a partial state (no DISTINCT), the stream flushes: it writes every
//     group's key and partial state (the layout of a Partial stage's output) to one of
//     aggSpillParts spill files chosen by a hash of the key, frees its groups and goes on with
//     an empty table. At the end it flushes what is left, and its output is each file merged
//     by a Final stage of the same aggregates (stateMerger), one file after the other. Files
//     are appended in flush order, so order-sensitive states (GROUP_CONCAT) merge in input
//     order.
//   - Otherwise (DISTINCT aggregates, whose state cannot be merged) the batch's groups are
//     counted anyway (at most one batch beyond the limit) and the stream spills rows instead:
//     rows of groups it holds are folded in memory as before, rows of any other group are
//     written unchanged to a file chosen by a hash of their key, so every group lives wholly in
//     memory or wholly in one file. The in-memory groups are output first, then each file is
//     aggregated by a fresh stream of the same operator.
//
// Either way a file's stream may spill again, with the hash salted by its level, down to
// aggSpillMaxLevel levels. The groups and values are those of the in-memory aggregation; only
// the order of groups differs. A refusal with nothing left to spill (the deepest level, no
// group keys with DISTINCT, a held group's DISTINCT state growing while rows spill) fails the
// query with the pool's errs.ResourceExhausted error.

const (
	// aggSpillParts is how many files a spilling aggregate partitions its new groups into.
	aggSpillParts = 16
	// aggSpillMaxLevel is how many times a spilled partition may spill again.
	aggSpillMaxLevel = 3
	// aggMapEntryBytes estimates a hash table entry: a Go map entry or a fixed-width slot at
	// half load, with its share of the table's overhead.
	aggMapEntryBytes = 48
	// aggStateBytes estimates one group's state in one fixed-size accumulator (a value, a
	// count, validity).
	aggStateBytes = 24
)

// aggSeed hashes group keys to spill partitions.
var aggSeed = maphash.MakeSeed()

// aggSizer is an accumulator whose state size is not a constant per group.
type aggSizer interface{ heldBytes() int64 }

// aggAccHeldBytes estimates what acc holds for groups groups.
func aggAccHeldBytes(acc aggAccumulator, groups int) int64 {
	if s, ok := acc.(aggSizer); ok {
		return s.heldBytes()
	}
	return int64(groups) * aggStateBytes
}

// heldBytes estimates what the stream's groups and accumulators hold.
func (s *hashAggregateStream) heldBytes() int64 {
	n := s.groups.len()
	b := s.groups.heldBytes()
	for _, acc := range s.accs {
		b += aggAccHeldBytes(acc, n)
	}
	return b
}

// account reserves the growth of the stream's state since the last call, starting to spill
// when that is refused and spilling can help.
func (s *hashAggregateStream) account() error {
	held := s.heldBytes()
	delta := held - s.res.Size()
	if delta <= 0 {
		s.res.Shrink(-delta)
		return nil
	}
	err := s.res.TryGrow(delta)
	if err == nil || !isExhausted(err) || s.level >= aggSpillMaxLevel {
		return err
	}
	if s.canFlush() {
		return s.flushStates()
	}
	if s.spill != nil || len(s.op.groupBy) == 0 {
		return err
	}
	s.res.Grow(delta)
	s.spill = &aggSpill{files: newSpillFiles(s.ctx, s.tc, "aggregate")}
	return nil
}

// canFlush reports whether every aggregate has a partial state to flush.
func (s *hashAggregateStream) canFlush() bool {
	for _, a := range s.op.aggs {
		if a.Distinct {
			return false
		}
	}
	return true
}

// aggFlush is the state files of a flushing aggregate stream.
type aggFlush struct {
	files   *spillFiles
	merger  *HashAggregate
	writers [aggSpillParts]*spillWriter
	runs    []*spillRun
	key     []byte
}

// flushStates writes every group's key and state to its partition file and empties the
// table.
func (s *hashAggregateStream) flushStates() error {
	if s.flush == nil {
		merger, err := s.op.stateMerger()
		if err != nil {
			return err
		}
		s.flush = &aggFlush{files: newSpillFiles(s.ctx, s.tc, "aggregate"), merger: merger}
	}
	mem := s.tc.Alloc
	keys, err := s.groups.keyColumns(mem)
	if err != nil {
		return err
	}
	cols := keys
	defer func() { aggReleaseArrays(cols) }()
	for i, acc := range s.accs {
		states, err := acc.state(mem)
		if err != nil {
			return fmt.Errorf("aggregate %s: %w", s.op.aggs[i].Name, err)
		}
		cols = append(cols, states...)
	}
	schema := s.flush.merger.input.Schema()
	batch := array.NewRecordBatch(schema, cols, int64(s.groups.len()))
	defer batch.Release()
	var parts [aggSpillParts][]int32
	enc, err := NewRowKeyEncoder(keys)
	if err != nil {
		return err
	}
	for i := range s.groups.len() {
		s.flush.key = append(enc.Append(s.flush.key[:0], i), byte(s.level))
		p := maphash.Bytes(aggSeed, s.flush.key) % aggSpillParts
		parts[p] = append(parts[p], int32(i))
	}
	if err := writeParts(s.ctx, s.tc, s.flush.files, &s.flush.writers, schema, batch, parts); err != nil {
		return err
	}
	s.resetGroups()
	s.res.Shrink(s.res.Size())
	return nil
}

// writeParts writes rows parts[p] of batch (of schema) to writers[p], creating it on first use.
func writeParts(ctx context.Context, tc *TaskContext, files *spillFiles, writers *[aggSpillParts]*spillWriter, schema *arrow.Schema, batch arrow.RecordBatch, parts [aggSpillParts][]int32) error {
	for p, idx := range parts {
		if len(idx) == 0 {
			continue
		}
		w := writers[p]
		if w == nil {
			var err error
			if w, err = files.create(schema, tc.Alloc); err != nil {
				return err
			}
			writers[p] = w
		}
		taken, err := takeBatchRows(ctx, tc, batch, idx)
		if err != nil {
			return err
		}
		part := array.NewRecordBatch(schema, taken.Columns(), taken.NumRows())
		taken.Release()
		err = w.write(part)
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// finishFlush flushes the last groups and closes the state files.
func (s *hashAggregateStream) finishFlush() error {
	if err := s.flushStates(); err != nil {
		return err
	}
	s.groups.release()
	s.accs = nil
	return finishParts(&s.flush.writers, &s.flush.runs)
}

// finishParts closes the partition files being written (writers) into runs to read back.
func finishParts(writers *[aggSpillParts]*spillWriter, runs *[]*spillRun) error {
	for p, w := range writers {
		if w == nil {
			continue
		}
		writers[p] = nil
		run, err := w.finish()
		if err != nil {
			return err
		}
		*runs = append(*runs, run)
	}
	return nil
}

// abortParts abandons the partition files being written and removes every file of files.
func abortParts(writers *[aggSpillParts]*spillWriter, files *spillFiles) {
	for p, w := range writers {
		if w != nil {
			w.abort()
			writers[p] = nil
		}
	}
	files.removeAll()
}

// nextFlushed returns the next batch of the merged state files, one file after the other; nil
// at the end.
func (s *hashAggregateStream) nextFlushed() (arrow.RecordBatch, error) {
	return s.nextOfRuns(&s.flush.runs, s.flush.merger)
}

// nextOfRuns returns the next batch of op aggregating the files of runs, one after the other, a
// level below this stream; nil at the end.
func (s *hashAggregateStream) nextOfRuns(runs *[]*spillRun, op *HashAggregate) (arrow.RecordBatch, error) {
	for {
		if s.sub != nil {
			if s.sub.Next() {
				b := s.sub.RecordBatch()
				b.Retain()
				return b, nil
			}
			err := s.sub.Err()
			s.sub.Release()
			s.sub = nil
			if err != nil {
				return nil, err
			}
		}
		if len(*runs) == 0 {
			return nil, nil
		}
		run := (*runs)[0]
		*runs = (*runs)[1:]
		rdr, err := run.open(s.tc.Alloc)
		if err != nil {
			return nil, err
		}
		input := stream.Pull(s.ctx, run.schema, rdr.next, rdr.close)
		s.sub = newHashAggregateLevel(s.ctx, op, input, s.tc, s.level+1)
	}
}

// releaseFlush closes the state files and removes them.
func (s *hashAggregateStream) releaseFlush() {
	if s.flush == nil {
		return
	}
	abortParts(&s.flush.writers, s.flush.files)
	s.flush.runs = nil
}

// stateMerger returns the aggregate that merges h's partial states (a Partial stage's output
// layout) into h's output: a Final stage, which for a Partial h (or a state merger) outputs
// merged states.
func (h *HashAggregate) stateMerger() (*HashAggregate, error) {
	var states *arrow.Schema
	switch {
	case h.mode == AggregateFinal:
		states = h.input.Schema()
	case h.mode == AggregatePartial:
		states = h.schema
	default:
		partial, err := NewHashAggregate(h.input, h.groupBy, h.groupNames, h.aggs, AggregatePartial)
		if err != nil {
			return nil, err
		}
		states = partial.Schema()
	}
	keys := make([]Expr, len(h.groupBy))
	for i := range keys {
		keys[i] = NewColumn(i, h.groupNames[i], states.Field(i).Type)
	}
	op, err := NewHashAggregate(aggStates{states}, keys, h.groupNames, h.aggs, AggregateFinal)
	if err != nil {
		return nil, err
	}
	m := op.(*HashAggregate)
	if h.mode == AggregatePartial || h.mergeStates {
		m.mergeStates, m.schema = true, h.schema
	}
	return m, nil
}

// aggStates stands for the state files as a state merger's input: only its schema is used.
type aggStates struct{ schema *arrow.Schema }

func (a aggStates) Schema() *arrow.Schema { return a.schema }
func (a aggStates) Children() []Operator  { return nil }
func (a aggStates) Partitions() int       { return 1 }
func (a aggStates) String() string        { return "AggregateStates" }
func (a aggStates) Execute(context.Context, int, *TaskContext) (array.RecordReader, error) {
	return nil, errs.Internalf("aggregate states are read from spill files only")
}

// aggSpill is the spill files of a spilling aggregate stream.
type aggSpill struct {
	files   *spillFiles
	writers [aggSpillParts]*spillWriter
	runs    []*spillRun
	key     []byte
}

// foldSpilling folds the rows of batch whose group is held and writes the others to their
// partition files.
func (s *hashAggregateStream) foldSpilling(batch arrow.RecordBatch) error {
	rows := int(batch.NumRows())
	keys, err := s.evalAll(s.op.groupBy, batch)
	if err != nil {
		return err
	}
	defer aggReleaseArrays(keys)
	ids, err := s.groups.find(keys, rows)
	if err != nil {
		return err
	}
	enc, err := NewRowKeyEncoder(keys)
	if err != nil {
		return err
	}
	var held []int32
	var parts [aggSpillParts][]int32
	for i, id := range ids {
		if id >= 0 {
			held = append(held, int32(i))
			continue
		}
		s.spill.key = append(enc.Append(s.spill.key[:0], i), byte(s.level))
		p := maphash.Bytes(aggSeed, s.spill.key) % aggSpillParts
		parts[p] = append(parts[p], int32(i))
	}
	if err := writeParts(s.ctx, s.tc, s.spill.files, &s.spill.writers, s.op.input.Schema(), batch, parts); err != nil {
		return err
	}
	switch len(held) {
	case 0:
		return nil
	case rows:
		return s.foldHeld(batch)
	}
	sub, err := takeBatchRows(s.ctx, s.tc, batch, held)
	if err != nil {
		return err
	}
	defer sub.Release()
	return s.foldHeld(sub)
}

// finishSpill closes the partition files.
func (s *hashAggregateStream) finishSpill() error {
	return finishParts(&s.spill.writers, &s.spill.runs)
}

// nextSpilled returns the next batch of the spilled partitions' groups, aggregating one
// partition after the other; nil at the end.
func (s *hashAggregateStream) nextSpilled() (arrow.RecordBatch, error) {
	return s.nextOfRuns(&s.spill.runs, s.op)
}

// releaseSpill closes the partition files and removes them.
func (s *hashAggregateStream) releaseSpill() {
	if s.sub != nil {
		s.sub.Release()
		s.sub = nil
	}
	if s.spill == nil {
		return
	}
	abortParts(&s.spill.writers, s.spill.files)
	s.spill.runs = nil
}
