package exec

import "math/bits"

// joinFilter is a one-hash Bloom filter over the keys of a large join table: a bit per key
// hash, 8 to 16 bits per key, so that it stays in cache where the table does not. A probe key
// whose bit is clear has no build rows, and is so answered without reaching into the table;
// most probe rows of a selective join (TPC-H Q3's lineitem against the orders of one segment
// and period, Q22's orders against a few customers) miss, each a cache miss in the table. A set
// bit says nothing (about one key in ten of those absent sets it): the table decides.
type joinFilter struct {
	bits  []uint64
	shift uint // 64 - log2(len(bits)*64)
	// exact marks a bit per key value from lo to lo+span instead (join_filter_exact.go):
	// mayHave is then false exactly for the keys not added.
	exact    bool
	lo, span uint64
}

// joinFilterMinSlots is the smallest table given a filter: below it (512 KiB of slots) the table
// itself stays in cache. Tests lower it.
var joinFilterMinSlots = 1 << 15

// joinFilterTrial is how many probes a prober makes through a filter before it keeps using it
// only if the filter turned away at least a quarter of them: where most probe keys are in the
// table (a join along a foreign key), the filter would be one more memory access per row.
const joinFilterTrial = 1 << 14

// newJoinFilter returns a filter sized for n keys.
func newJoinFilter(n int) joinFilter {
	words := 1
	for words*64 < 8*n {
		words *= 2
	}
	return joinFilter{bits: make([]uint64, words), shift: uint(64 - bits.TrailingZeros(uint(words*64)))}
}

// bit is where hash h goes: the top bits of a multiple other than the table's, so that the
// filter and the table's slots spread keys independently.
func (f *joinFilter) bit(h uint64) uint64 { return (h * 0xC2B2AE3D27D4EB4F) >> f.shift }

func (f *joinFilter) add(h uint64) {
	b := f.bit(h)
	f.bits[b>>6] |= 1 << (b & 63)
}

// mayHave reports false only when no key added has hash h.
func (f *joinFilter) mayHave(h uint64) bool {
	if f.exact {
		d := h - f.lo
		return d <= f.span && f.bits[d>>6]&(1<<(d&63)) != 0
	}
	b := f.bit(h)
	return f.bits[b>>6]&(1<<(b&63)) != 0
}
