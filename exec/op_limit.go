package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/stream"
)

// Limit skips the first offset rows of its single input partition and passes on at most count
// rows after them (count < 0: all the rest). It stops pulling from the input, and releases it, as
// soon as count rows have passed, so upstream work stops early. Batches pass through unchanged or
// as zero-copy slices.
type Limit struct {
	input         Operator
	offset, count int64
}

// NewLimit builds a Limit. The input must have exactly one partition (the planner puts a
// Coalesce or a Sort below it); Execute reports an error otherwise. A negative offset counts as 0.
func NewLimit(input Operator, offset, count int64) Operator {
	return &Limit{input: input, offset: max(offset, 0), count: count}
}

func (l *Limit) Schema() *arrow.Schema { return l.input.Schema() }
func (l *Limit) Children() []Operator  { return []Operator{l.input} }
func (l *Limit) Partitions() int       { return 1 }

// Offset and Count return the node's parameters (Count < 0 means no limit).
func (l *Limit) Offset() int64 { return l.offset }
func (l *Limit) Count() int64  { return l.count }

// String describes the node, e.g. Limit(offset=0, count=5).
func (l *Limit) String() string { return fmt.Sprintf("Limit(offset=%d, count=%d)", l.offset, l.count) }

func (l *Limit) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	if partition != 0 {
		return nil, errs.Internalf("limit has one partition, asked for partition %d", partition)
	}
	if n := l.input.Partitions(); n != 1 {
		return nil, errs.Internalf("limit needs a single input partition, its input has %d", n)
	}
	s := &limitStream{skip: l.offset, remaining: l.count}
	if l.count != 0 {
		input, err := l.input.Execute(ctx, 0, tc)
		if err != nil {
			return nil, err
		}
		s.input = input
	}
	return stream.Pull(ctx, l.input.Schema(), s.next, s.releaseInput), nil
}

// limitStream is the single partition of a Limit.
type limitStream struct {
	input     array.RecordReader // nil once the limit is reached
	skip      int64              // rows still to skip
	remaining int64              // rows still to pass on; negative for no limit
}

func (s *limitStream) next() (arrow.RecordBatch, error) {
	for s.input != nil && s.remaining != 0 && s.input.Next() {
		batch := s.input.RecordBatch()
		rows := batch.NumRows()
		if s.skip >= rows {
			s.skip -= rows
			continue
		}
		start, end := s.skip, rows
		s.skip = 0
		if s.remaining >= 0 && end-start > s.remaining {
			end = start + s.remaining
		}
		if s.remaining > 0 {
			s.remaining -= end - start
		}
		if start == 0 && end == rows {
			batch.Retain()
			return batch, nil
		}
		return batch.NewSlice(start, end), nil
	}
	var err error
	if s.input != nil && s.remaining != 0 {
		err = s.input.Err()
	}
	s.releaseInput()
	return nil, err
}

func (s *limitStream) releaseInput() {
	if s.input != nil {
		s.input.Release()
		s.input = nil
	}
}
