package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/stream"
)

// hashAggregateStream is one partition of a HashAggregate. The first Next drains the input,
// assigning group ids batch by batch and folding each batch into the accumulators; later calls
// slice the finished columns into batches of at most tc.RowsPerBatch() rows.
type hashAggregateStream struct {
	ctx    context.Context
	op     *HashAggregate
	tc     *TaskContext
	input  array.RecordReader
	groups *aggGroupTable
	accs   []aggAccumulator
	out    []arrow.Array // finished output columns, built after the input is drained
	rows   int
	pos    int
}

func newHashAggregateStream(ctx context.Context, op *HashAggregate, input array.RecordReader, tc *TaskContext) array.RecordReader {
	keyTypes := make([]arrow.DataType, len(op.groupBy))
	for i, g := range op.groupBy {
		keyTypes[i] = g.DataType()
	}
	s := &hashAggregateStream{ctx: ctx, op: op, tc: tc, input: input, groups: newAggGroupTable(keyTypes)}
	s.accs = make([]aggAccumulator, len(op.defs))
	for i, def := range op.defs {
		s.accs[i] = def.newAcc()
		s.accs[i].grow(s.groups.len())
	}
	return stream.Pull(ctx, op.schema, s.next, s.release)
}

func (s *hashAggregateStream) next() (arrow.RecordBatch, error) {
	if s.out == nil {
		if err := s.consume(); err != nil {
			return nil, err
		}
		if err := s.build(); err != nil {
			return nil, err
		}
	}
	if s.pos >= s.rows {
		return nil, nil
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

// fold adds one input batch to the groups and accumulators.
func (s *hashAggregateStream) fold(batch arrow.RecordBatch) error {
	rows := int(batch.NumRows())
	if rows == 0 {
		return nil
	}
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
		if s.op.mode == AggregatePartial {
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
}

// aggReleaseArrays releases every non-nil array of arrs.
func aggReleaseArrays(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}
