package exec

// fixedKeyMap maps 64-bit keys to dense group ids. It is the group table of a single key column
// of a fixed-width type (int64, date32, timestamp, float64 by normalized bits), where it replaces
// a Go map: open addressing with linear probing over one slice of (key, id) slots, so a lookup is
// a multiply, a shift and usually one cache line.
//
// The table is kept at most half full, so probe runs stay short; it doubles when it would pass
// that. Slot ids are stored plus one, so the zero slot is empty.
type fixedKeyMap struct {
	slots []fixedKeySlot
	shift uint // 64 - log2(len(slots)): the hash keeps the top bits of the product
	count int
}

type fixedKeySlot struct {
	key uint64
	id  uint32 // group id + 1; 0 marks an empty slot
}

// fixedKeyMapMinSlots is the initial table size: small enough for a few groups, large enough to
// skip the first doublings of a typical GROUP BY.
const fixedKeyMapMinSlots = 256

// hashSlot is Fibonacci hashing: the golden-ratio multiple spreads consecutive keys (the common
// case for ids and dates) over the whole table.
func (m *fixedKeyMap) hashSlot(key uint64) uint64 {
	return (key * 0x9E3779B97F4A7C15) >> m.shift
}

// get returns the group id of key when key sits in its home slot (the common case in a half
// empty table); false means "look further with lookupOrInsert", not "absent". It is small
// enough to be inlined into the callers' loops.
func (m *fixedKeyMap) get(key uint64) (uint32, bool) {
	if len(m.slots) == 0 {
		return 0, false
	}
	s := &m.slots[m.hashSlot(key)&uint64(len(m.slots)-1)]
	if s.id != 0 && s.key == key {
		return s.id - 1, true
	}
	return 0, false
}

// lookupOrInsert returns the group id of key and true, or, when key is new, stores next as its id
// and returns next and false.
func (m *fixedKeyMap) lookupOrInsert(key uint64, next uint32) (uint32, bool) {
	if m.slots == nil {
		m.resize(fixedKeyMapMinSlots)
	}
	mask := uint64(len(m.slots) - 1)
	for h := m.hashSlot(key); ; h = (h + 1) & mask {
		s := &m.slots[h]
		if s.id == 0 {
			if 2*(m.count+1) > len(m.slots) {
				m.resize(2 * len(m.slots))
				return m.lookupOrInsert(key, next)
			}
			s.key, s.id = key, next+1
			m.count++
			return next, false
		}
		if s.key == key {
			return s.id - 1, true
		}
	}
}

// find returns the group id of key, probing as far as needed, and whether it is present.
func (m *fixedKeyMap) find(key uint64) (uint32, bool) {
	if len(m.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(m.slots) - 1)
	for h := m.hashSlot(key); ; h = (h + 1) & mask {
		s := &m.slots[h]
		if s.id == 0 {
			return 0, false
		}
		if s.key == key {
			return s.id - 1, true
		}
	}
}

// resize rebuilds the table with n slots (a power of two).
func (m *fixedKeyMap) resize(n int) {
	old := m.slots
	m.slots = make([]fixedKeySlot, n)
	m.shift = 64
	for size := n; size > 1; size >>= 1 {
		m.shift--
	}
	mask := uint64(n - 1)
	for _, s := range old {
		if s.id == 0 {
			continue
		}
		h := m.hashSlot(s.key)
		for m.slots[h].id != 0 {
			h = (h + 1) & mask
		}
		m.slots[h] = s
	}
}
