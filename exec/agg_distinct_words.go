package exec

// distinctWordSet is the set of (group, value words) keys a DISTINCT aggregate of one argument
// with a word form has seen: open addressing with linear probing over one slice of slots, at
// most half full, doubling when it would pass that. It replaces a Go map, whose inserts (most
// keys of COUNT(DISTINCT ps_suppkey) in TPC-H Q16 are new) cost a hash of the whole key, a
// control-word match and, as it grows, incremental moves.
type distinctWordSet struct {
	slots []distinctWordSlot
	shift uint // 64 - log2(len(slots))
	count int
}

type distinctWordSlot struct {
	lo, hi uint64
	group  uint32
	full   bool
}

// distinctWordSetMinSlots is the first table size.
const distinctWordSetMinSlots = 64

// distinctWordSlotBytes is a slot's size.
const distinctWordSlotBytes = 24

// home is the first slot probed for a key: the words and the group mixed by multiplications
// by odd constants, folded, then Fibonacci hashing keeps the top bits.
func (s *distinctWordSet) home(group uint32, lo, hi uint64) uint64 {
	x := lo*0x9E3779B97F4A7C15 ^ hi*0xC2B2AE3D27D4EB4F ^ uint64(group)*0x165667B19E3779F9
	x ^= x >> 32
	return (x * 0x9E3779B97F4A7C15) >> s.shift
}

// add inserts the key and reports whether it was new.
func (s *distinctWordSet) add(group uint32, lo, hi uint64) bool {
	if s.slots == nil {
		s.resize(distinctWordSetMinSlots)
	}
	mask := uint64(len(s.slots) - 1)
	for i := s.home(group, lo, hi); ; i = (i + 1) & mask {
		sl := &s.slots[i]
		if !sl.full {
			if 2*(s.count+1) > len(s.slots) {
				s.resize(2 * len(s.slots))
				return s.add(group, lo, hi)
			}
			*sl = distinctWordSlot{lo: lo, hi: hi, group: group, full: true}
			s.count++
			return true
		}
		if sl.lo == lo && sl.group == group && sl.hi == hi {
			return false
		}
	}
}

// bytes is what the table holds.
func (s *distinctWordSet) bytes() int64 { return int64(len(s.slots)) * distinctWordSlotBytes }

// resize moves the keys to a table of n slots (a power of two).
func (s *distinctWordSet) resize(n int) {
	old := s.slots
	s.slots = make([]distinctWordSlot, n)
	s.shift = 64
	for m := n; m > 1; m >>= 1 {
		s.shift--
	}
	mask := uint64(n - 1)
	for _, sl := range old {
		if !sl.full {
			continue
		}
		i := s.home(sl.group, sl.lo, sl.hi)
		for s.slots[i].full {
			i = (i + 1) & mask
		}
		s.slots[i] = sl
	}
}
