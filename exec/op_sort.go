package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/stream"
)

// SortKey is one ORDER BY key.
type SortKey struct {
	Expr Expr
	Desc bool
}

// Sort orders all rows of all its input partitions into one output partition, in MySQL order:
// NULLs first ascending and last descending, numbers numerically, strings bytewise, booleans
// false < true. The sort is stable: rows with equal keys keep their input order within a
// partition (partitions are read concurrently, so their relative order is not fixed).
//
// With fetch > 0 only the first fetch rows are output (top-k): each input partition keeps a
// bounded buffer, cut back to its best fetch rows whenever it grows past about twice that, so
// memory stays O(fetch) and nothing close to the whole input is sorted at once.
type Sort struct {
	input Operator
	keys  []SortKey
	fetch int64
}

// NewSort builds a Sort; fetch <= 0 means all rows.
func NewSort(input Operator, keys []SortKey, fetch int64) Operator {
	return &Sort{input: input, keys: keys, fetch: max(fetch, 0)}
}

func (s *Sort) Schema() *arrow.Schema { return s.input.Schema() }
func (s *Sort) Children() []Operator  { return []Operator{s.input} }
func (s *Sort) Partitions() int       { return 1 }

// Keys and Fetch return the node's parameters (Fetch 0 means all rows).
func (s *Sort) Keys() []SortKey { return s.keys }
func (s *Sort) Fetch() int64    { return s.fetch }

// String describes the node, e.g. Sort(keys=[a DESC, b], fetch=10).
func (s *Sort) String() string {
	keys := make([]string, len(s.keys))
	for i, k := range s.keys {
		keys[i] = k.Expr.String()
		if k.Desc {
			keys[i] += " DESC"
		}
	}
	if s.fetch > 0 {
		return fmt.Sprintf("Sort(keys=[%s], fetch=%d)", strings.Join(keys, ", "), s.fetch)
	}
	return fmt.Sprintf("Sort(keys=[%s])", strings.Join(keys, ", "))
}

func (s *Sort) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	if partition != 0 {
		return nil, errs.Internalf("sort has one partition, asked for partition %d", partition)
	}
	st := &sortStream{ctx: ctx, op: s, tc: tc}
	return stream.Pull(ctx, s.input.Schema(), st.next, st.release), nil
}
