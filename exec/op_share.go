package exec

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// Share is one node's part of a partitioned plan: a set of its input partitions, renumbered
// from 0. Shares that together name each input partition once (AssignShares) divide the rows of
// a query among data nodes without moving any.
type Share struct {
	input      Operator
	share, of  int
	partitions []int // input partitions of this share, ascending
}

// NewShareOf returns the share made of the given input partitions (each in range, no
// repeats), in ascending order.
func NewShareOf(input Operator, partitions []int) (Operator, error) {
	n := input.Partitions()
	parts := slices.Clone(partitions)
	slices.Sort(parts)
	for i, p := range parts {
		if p < 0 || p >= n {
			return nil, errs.Invalidf("partition %d does not exist: the plan has %d", p, n)
		}
		if i > 0 && parts[i-1] == p {
			return nil, errs.Invalidf("partition %d is named twice", p)
		}
	}
	return &Share{input: input, share: -1, partitions: parts}, nil
}

// NewShare returns share (0-based) of of shares of input's partitions, balanced by sizes (one
// per input partition, e.g. Scan.TaskBytes; nil counts every partition as 1).
func NewShare(input Operator, share, of int, sizes []int64) (Operator, error) {
	if of < 1 || share < 0 || share >= of {
		return nil, errs.Invalidf("share %d of %d does not exist", share, of)
	}
	n := input.Partitions()
	if sizes == nil {
		sizes = make([]int64, n)
		for i := range sizes {
			sizes[i] = 1
		}
	}
	if len(sizes) != n {
		return nil, errs.Internalf("share of %d partitions given %d sizes", n, len(sizes))
	}
	return &Share{input: input, share: share, of: of, partitions: AssignShares(sizes, of)[share]}, nil
}

// AssignShares divides partitions with the given sizes into of shares of nearly equal total
// size: largest first, each to the share with the least so far (ties to the lower partition
// and share index), so the result depends only on sizes and of. Each share lists its
// partitions in ascending order; a share given none is nil.
//
// It takes O(n log n + n log of) time for n partitions: the shares wait in a min-heap keyed by
// (bytes so far, share index), whose root is exactly the share a scan of all of them for the
// least loaded, lowest index would pick.
func AssignShares(sizes []int64, of int) [][]int {
	// Largest first, ties to the lower index: a total order, so an unstable sort gives the one
	// order a stable sort by size alone would.
	type part struct {
		size  int64
		index int
	}
	order := make([]part, len(sizes))
	for i, s := range sizes {
		order[i] = part{s, i}
	}
	slices.SortFunc(order, func(a, b part) int {
		if c := cmp.Compare(b.size, a.size); c != 0 {
			return c
		}
		return cmp.Compare(a.index, b.index)
	})
	load := make([]int64, of)
	less := func(a, b int) bool { return load[a] < load[b] || load[a] == load[b] && a < b }
	// All loads start at 0, so shares in index order already form a heap.
	heap := make([]int, of)
	for s := range heap {
		heap[s] = s
	}
	owner := make([]int, len(sizes))
	counts := make([]int, of)
	for _, p := range order {
		least := heap[0]
		owner[p.index] = least
		counts[least]++
		load[least] += p.size
		// Only the root's key changed. Had it fallen (a negative size) the root would still be
		// the least, and sifting down leaves it in place.
		for i := 0; ; {
			c := 2*i + 1
			if c >= of {
				break
			}
			if c+1 < of && less(heap[c+1], heap[c]) {
				c++
			}
			if !less(heap[c], heap[i]) {
				break
			}
			heap[i], heap[c] = heap[c], heap[i]
			i = c
		}
	}
	shares := make([][]int, of)
	for s, n := range counts {
		if n > 0 {
			shares[s] = make([]int, 0, n)
		}
	}
	for p, s := range owner {
		shares[s] = append(shares[s], p)
	}
	return shares
}

func (s *Share) Schema() *arrow.Schema { return s.input.Schema() }
func (s *Share) Children() []Operator  { return []Operator{s.input} }

// Partitions is the number of input partitions in this share (possibly 0).
func (s *Share) Partitions() int { return len(s.partitions) }

func (s *Share) String() string {
	if s.share < 0 {
		return fmt.Sprintf("Share: %d of %d partitions", len(s.partitions), s.input.Partitions())
	}
	return fmt.Sprintf("Share: %d of %d (%d of %d partitions)", s.share+1, s.of, len(s.partitions), s.input.Partitions())
}

func (s *Share) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	if partition < 0 || partition >= len(s.partitions) {
		return nil, errs.Internalf("share has %d partitions, asked for %d", len(s.partitions), partition)
	}
	return s.input.Execute(ctx, s.partitions[partition], tc)
}
