package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// Share is one node's part of a partitioned plan: the input partitions p with p % of == share,
// renumbered from 0. The shares 0…of-1 of one input together hold each input partition exactly
// once, which is how the rows of a query are divided among data nodes without moving any.
type Share struct {
	input     Operator
	share, of int
}

// NewShare returns share (0-based) of of shares of input's partitions.
func NewShare(input Operator, share, of int) (Operator, error) {
	if of < 1 || share < 0 || share >= of {
		return nil, errs.Invalidf("share %d of %d does not exist", share, of)
	}
	return &Share{input: input, share: share, of: of}, nil
}

func (s *Share) Schema() *arrow.Schema { return s.input.Schema() }
func (s *Share) Children() []Operator  { return []Operator{s.input} }

// Partitions is the number of input partitions in this share (possibly 0).
func (s *Share) Partitions() int {
	n := s.input.Partitions()
	if n <= s.share {
		return 0
	}
	return (n-s.share-1)/s.of + 1
}

func (s *Share) String() string {
	return fmt.Sprintf("Share: %d of %d (%d of %d partitions)", s.share+1, s.of, s.Partitions(), s.input.Partitions())
}

func (s *Share) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	if partition < 0 || partition >= s.Partitions() {
		return nil, errs.Internalf("share has %d partitions, asked for %d", s.Partitions(), partition)
	}
	return s.input.Execute(ctx, s.share+partition*s.of, tc)
}
