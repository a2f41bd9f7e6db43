package exec

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// aggDistinct feeds its inner accumulator each distinct argument tuple of a group once. Rows that
// repeat a tuple already seen in their group, or that have a NULL argument (which every aggregate
// ignores), are routed to a discard group: the inner accumulator sees group g as g+1 and group 0
// collects the discarded rows, which finish drops. Distinctness uses the row-key encoding, so it
// agrees with GROUP BY equality (NULLs aside, -0 = +0, 1.0 = 1.00).
//
// It keeps every distinct (group, tuple) key in memory and has no partial state: DISTINCT
// aggregates run in a single stage.
//
// A single argument of a type with a word form (keyWords: integers, dates, floats, decimals…)
// is keyed by its words, which compare as its encoding does, in seenWords: no key bytes to
// build and hash per row, and no Go map (TPC-H Q16's COUNT(DISTINCT ps_suppkey)).
type aggDistinct struct {
	inner     aggAccumulator
	seen      map[string]struct{}
	seenWords distinctWordSet
	lo, hi    []uint64
	key       []byte
	shifted   []uint32
	bytes     int64 // the keys in seen: their bytes plus a map entry's overhead each
	groups    int
}

// heldBytes is what the distinct keys and the inner accumulator hold.
func (a *aggDistinct) heldBytes() int64 {
	return a.bytes + a.seenWords.bytes() + aggAccHeldBytes(a.inner, a.groups+1)
}

func newAggDistinct(inner aggAccumulator) *aggDistinct {
	inner.grow(1)
	return &aggDistinct{inner: inner, seen: map[string]struct{}{}}
}

func (a *aggDistinct) grow(n int) {
	a.groups = max(a.groups, n)
	a.inner.grow(n + 1)
}

func (a *aggDistinct) update(groups []uint32, args []arrow.Array) error {
	if len(args) == 1 && args[0].DataType().ID() != arrow.NULL && keyWords(args[0].DataType()) > 0 {
		return a.updateWords(groups, args[0])
	}
	enc, err := NewRowKeyEncoder(args)
	if err != nil {
		return err
	}
	if cap(a.shifted) < len(groups) {
		a.shifted = make([]uint32, len(groups))
	}
	shifted := a.shifted[:len(groups)]
	for i, g := range groups {
		shifted[i] = 0
		if enc.HasNull(i) {
			continue
		}
		a.key = binary.AppendUvarint(a.key[:0], uint64(g))
		a.key = enc.Append(a.key, i)
		if _, dup := a.seen[string(a.key)]; dup {
			continue
		}
		a.seen[string(a.key)] = struct{}{}
		a.bytes += int64(len(a.key)) + aggMapEntryBytes
		shifted[i] = g + 1
	}
	return a.inner.update(shifted, args)
}

// updateWords is update for a single argument with a word form.
func (a *aggDistinct) updateWords(groups []uint32, arg arrow.Array) error {
	n := len(groups)
	a.lo = resize(a.lo, n)
	a.hi = resize(a.hi, n)
	hi := a.hi
	if keyWords(arg.DataType()) == 1 {
		hi = nil
		clear(a.hi)
	}
	if err := fillWords(arg, a.lo, hi); err != nil {
		return err
	}
	if cap(a.shifted) < n {
		a.shifted = make([]uint32, n)
	}
	shifted := a.shifted[:n]
	nulls := arg.NullN() > 0
	for i, g := range groups {
		shifted[i] = 0
		if nulls && arg.IsNull(i) {
			continue
		}
		if a.seenWords.add(g, a.lo[i], a.hi[i]) {
			shifted[i] = g + 1
		}
	}
	return a.inner.update(shifted, []arrow.Array{arg})
}

func (a *aggDistinct) merge([]uint32, []arrow.Array) error {
	return errs.Internalf("a DISTINCT aggregate has no partial state to merge")
}

func (a *aggDistinct) finish(mem memory.Allocator) (arrow.Array, error) {
	all, err := a.inner.finish(mem)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	return array.NewSlice(all, 1, int64(all.Len())), nil
}

func (a *aggDistinct) state(memory.Allocator) ([]arrow.Array, error) {
	return nil, errs.Internalf("a DISTINCT aggregate has no partial state")
}
