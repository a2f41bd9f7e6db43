package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/internal/stream"
)

// hashAggregateStream is one partition of a HashAggregate. The first Next drains the input,
// assigning group ids batch by batch and folding each batch into the accumulators; later calls
// slice the finished columns into batches of at most tc.RowsPerBatch() rows. What the groups
// hold is reserved from the query's memory; see op_aggregate_spill.go for what happens when
// that is refused.
type hashAggregateStream struct {
	ctx      context.Context
	op       *HashAggregate
	tc       *TaskContext
	input    array.RecordReader
	keyTypes []arrow.DataType
	groups   *aggGroupTable
	accs     []aggAccumulator
	out      []arrow.Array // finished output columns, built after the input is drained
	built    bool
	rows     int
	pos      int

	res   *mempool.Reservation
	level int                // 0, or how deep in spilled partitions this stream is
	spill *aggSpill          // nil until the stream spills new groups' rows
	flush *aggFlush          // nil until the stream flushes its groups' states
	sub   array.RecordReader // the stream of the spilled partition being aggregated
	// memo keeps the shared subexpressions of the arguments for the batch being folded.
	memo *evalMemo
}

func newHashAggregateStream(ctx context.Context, op *HashAggregate, input array.RecordReader, tc *TaskContext) array.RecordReader {
	return newHashAggregateLevel(ctx, op, input, tc, 0)
}

func newHashAggregateLevel(ctx context.Context, op *HashAggregate, input array.RecordReader, tc *TaskContext, level int) array.RecordReader {
	keyTypes := make([]arrow.DataType, len(op.groupBy))
	for i, g := range op.groupBy {
		keyTypes[i] = g.DataType()
	}
	ctx, memo := withEvalMemo(ctx)
	s := &hashAggregateStream{ctx: ctx, op: op, tc: tc, input: input, keyTypes: keyTypes,
		res: tc.Reserve(aggConsumer), level: level, memo: memo}
	s.resetGroups()
	return stream.Pull(ctx, op.schema, s.next, s.release)
}

func (s *hashAggregateStream) next() (arrow.RecordBatch, error) {
	if !s.built {
		if err := s.consume(); err != nil {
			return nil, err
		}
		if s.flush != nil {
			// Every group is in the state files: the output is theirs alone.
			if err := s.finishFlush(); err != nil {
				return nil, err
			}
			s.built = true
		}
	}
	if s.flush != nil {
		return s.nextFlushed()
	}
	if !s.built {
		if s.spill != nil {
			if err := s.finishSpill(); err != nil {
				return nil, err
			}
		}
		if err := s.build(); err != nil {
			return nil, err
		}
		s.built = true
	}
	if s.pos >= s.rows {
		if s.spill == nil {
			return nil, nil
		}
		// The groups held in memory are out: free them before aggregating the spilled ones.
		aggReleaseArrays(s.out)
		s.out = nil
		s.res.Free()
		return s.nextSpilled()
	}
	end := min(s.pos+s.tc.RowsPerBatch(), s.rows)
	cols := make([]arrow.Array, len(s.out))
	for i, c := range s.out {
		cols[i] = array.NewSlice(c, int64(s.pos), int64(end))
	}
	batch := array.NewRecordBatch(s.op.schema, cols, int64(end-s.pos))
	for _, c := range cols {
		c.Release()
	}
	s.pos = end
	return batch, nil
}

// consume drains the input into the accumulators and releases it.
func (s *hashAggregateStream) consume() error {
	defer s.releaseInput()
	for s.input.Next() {
		if err := stream.Stopped(s.ctx); err != nil {
			return err
		}
		if err := s.fold(s.input.RecordBatch()); err != nil {
			return err
		}
	}
	return s.input.Err()
}

// fold adds one input batch to the groups and accumulators, or, when the stream spills, the
// rows of held groups, spilling the others; then it reserves what the state grew by.
func (s *hashAggregateStream) fold(batch arrow.RecordBatch) error {
	if batch.NumRows() == 0 {
		return nil
	}
	var err error
	s.memo.start(batch)
	if s.spill != nil {
		err = s.foldSpilling(batch)
	} else {
		err = s.foldHeld(batch)
	}
	s.memo.end()
	if err != nil {
		return err
	}
	return s.account()
}

// foldHeld adds one input batch to the groups and accumulators.
func (s *hashAggregateStream) foldHeld(batch arrow.RecordBatch) error {
	rows := int(batch.NumRows())
	keys, err := s.evalAll(s.op.groupBy, batch)
	if err != nil {
		return err
	}
	ids, err := s.groups.assign(s.ctx, s.tc.Alloc, keys, rows)
	aggReleaseArrays(keys)
	if err != nil {
		return fmt.Errorf("grouping: %w", err)
	}
	for _, acc := range s.accs {
		acc.grow(s.groups.len())
	}
	statePos := len(s.op.groupBy)
	for i, acc := range s.accs {
		if s.op.mode == AggregateFinal {
			n := len(s.op.defs[i].states)
			if err := acc.merge(ids, batch.Columns()[statePos:statePos+n]); err != nil {
				return fmt.Errorf("aggregate %s: %w", s.op.aggs[i].Name, err)
			}
			statePos += n
			continue
		}
		args, err := s.evalAll(s.op.aggs[i].Args, batch)
		if err != nil {
			return err
		}
		err = acc.update(ids, args)
		aggReleaseArrays(args)
		if err != nil {
			return fmt.Errorf("aggregate %s: %w", s.op.aggs[i].Name, err)
		}
	}
	return nil
}

// evalAll evaluates exprs over batch; on error nothing is left to release.
func (s *hashAggregateStream) evalAll(exprs []Expr, batch arrow.RecordBatch) ([]arrow.Array, error) {
	out := make([]arrow.Array, 0, len(exprs))
	for _, e := range exprs {
		arr, err := e.Eval(s.ctx, s.tc, batch)
		if err != nil {
			aggReleaseArrays(out)
			return nil, err
		}
		out = append(out, arr)
	}
	return out, nil
}

// build turns the groups and accumulators into the output columns.
func (s *hashAggregateStream) build() error {
	mem := s.tc.Alloc
	keys, err := s.groups.keyColumns(mem)
	if err != nil {
		return err
	}
	s.out = keys
	for i, acc := range s.accs {
		if s.op.mode == AggregatePartial || s.op.mergeStates {
			states, err := acc.state(mem)
			if err != nil {
				return fmt.Errorf("aggregate %s: %w", s.op.aggs[i].Name, err)
			}
			s.out = append(s.out, states...)
			continue
		}
		col, err := acc.finish(mem)
		if err != nil {
			return fmt.Errorf("aggregate %s: %w", s.op.aggs[i].Name, err)
		}
		s.out = append(s.out, col)
	}
	s.rows = s.groups.len()
	s.accs = nil
	s.groups.release()
	return nil
}

func (s *hashAggregateStream) releaseInput() {
	if s.input != nil {
		s.input.Release()
		s.input = nil
	}
}

// release frees everything the stream holds.
func (s *hashAggregateStream) release() {
	s.releaseInput()
	s.groups.release()
	aggReleaseArrays(s.out)
	s.out = nil
	s.accs = nil
	s.releaseSpill()
	s.releaseFlush()
	s.res.Free()
}

// resetGroups starts an empty group table and accumulators.
func (s *hashAggregateStream) resetGroups() {
	if s.groups != nil {
		s.groups.release()
	}
	s.groups = newAggGroupTable(s.keyTypes)
	s.accs = make([]aggAccumulator, len(s.op.defs))
	for i, def := range s.op.defs {
		s.accs[i] = def.newAcc()
		s.accs[i].grow(s.groups.len())
	}
}

// aggReleaseArrays releases every non-nil array of arrs.
func aggReleaseArrays(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}
