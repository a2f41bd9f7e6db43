package exec

// A join table of one-word keys (integers, dates…) that span a range of at most
// joinExactBitsPerSlot bits per slot (or joinExactMinBits) gets an exact filter instead of a
// Bloom filter, whatever its size: a bit per value of the range, so that a probe key outside the
// range or between the build keys is turned away with one bit test and no walk along the table's
// probe run (TPC-H Q11's partsupp against the 400 suppliers of one nation, whose keys span
// 10 000 values; Q16's against the parts of some sizes, brands and types). The bitmap is at most
// a quarter of the slots' bytes, or 32 KiB.

// joinExactBitsPerSlot bounds an exact filter's range by the table's slots, and
// joinExactMinBits for a small table (32 KiB: TPC-H Q2's partsupp against the 800 parts of one
// size and type, whose keys span 200 000 values in a table of 2 Ki slots).
const (
	joinExactBitsPerSlot = 32
	joinExactMinBits     = 1 << 18
)

// newExactJoinFilter returns an exact filter over the one-word keys in t's slots, or false when
// their range is too wide.
func newExactJoinFilter(t *joinTable) (joinFilter, bool) {
	if t.form.words != 1 || t.live == 0 {
		return joinFilter{}, false
	}
	lo, hi := ^uint64(0), uint64(0)
	for _, s := range t.slots {
		if s.head != 0 {
			lo, hi = min(lo, s.hash), max(hi, s.hash)
		}
	}
	span := hi - lo // the keys are words: compared unsigned, a range across 0 of signed values is wide
	if span >= uint64(max(joinExactBitsPerSlot*len(t.slots), joinExactMinBits)) {
		return joinFilter{}, false
	}
	f := joinFilter{bits: make([]uint64, span/64+1), exact: true, lo: lo, span: span}
	for _, s := range t.slots {
		if s.head != 0 {
			d := s.hash - lo
			f.bits[d>>6] |= 1 << (d & 63)
		}
	}
	return f, true
}
