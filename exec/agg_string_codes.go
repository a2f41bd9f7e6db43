package exec

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// stringCodes numbers the distinct values of one string group-key column: 0, 1, 2, … in the
// order it meets them. With a code in place of each string, a tuple of group keys over string
// columns has a word form (groupKeyMap), so rows are grouped by comparing words instead of
// encoding, hashing and comparing each row's whole key bytes. Two values have the same code iff
// their bytes are equal, which is how the row-key encoding compares strings.
//
// The table is open addressing with linear probing over (hash, code) slots, at most half full;
// it keeps every value's bytes to confirm hash matches.
type stringCodes struct {
	slots []codeSlot
	shift uint
	data  []byte
	offs  []int // value c is data[offs[c]:offs[c+1]]
	// byByte holds the code + 1 of each one-byte value given one (0: none), so that columns
	// of one-character values (flags, statuses) are coded without probing.
	byByte [256]uint32
}

type codeSlot struct {
	hash uint64
	code uint32 // code + 1; 0 marks an empty slot
}

const stringCodesMinSlots = 64

func newStringCodes() *stringCodes {
	return &stringCodes{slots: make([]codeSlot, stringCodesMinSlots), shift: 64 - 6, offs: []int{0}}
}

// len is the number of codes given.
func (c *stringCodes) len() int { return len(c.offs) - 1 }

// stringSlotKey is what a slot holds for s: a string of up to 7 bytes is its bytes and its
// length packed in one word (top byte length+1), exactly, so equal keys are equal strings; a
// longer one its maphash with the top byte cleared, confirmed against the kept bytes.
func stringSlotKey(s []byte) (key uint64, exact bool) {
	if n := len(s); n <= 7 {
		var w uint64
		if cap(s) >= 8 {
			w = binary.LittleEndian.Uint64(s[:8]) & (1<<(8*n) - 1)
		} else {
			for i, b := range s {
				w |= uint64(b) << (8 * i)
			}
		}
		return w | uint64(n+1)<<56, true
	}
	return maphash.Bytes(joinHashSeed, s) &^ (0xFF << 56), false
}

// code returns the code of s; when s has none, it gives it the next code if insert, and
// returns false otherwise. added is the bytes a new code holds (0 when none was given).
func (c *stringCodes) code(s []byte, insert bool) (code uint32, ok bool, added int64) {
	h, exact := stringSlotKey(s)
	mask := uint64(len(c.slots) - 1)
	for i := ((h * 0x9E3779B97F4A7C15) >> c.shift) & mask; ; i = (i + 1) & mask {
		slot := &c.slots[i]
		if slot.code == 0 {
			if !insert {
				return 0, false, 0
			}
			code = uint32(c.len())
			slot.hash, slot.code = h, code+1
			c.data = append(c.data, s...)
			c.offs = append(c.offs, len(c.data))
			if len(s) == 1 {
				c.byByte[s[0]] = code + 1
			}
			if 2*c.len() > len(c.slots) {
				c.grow()
			}
			return code, true, int64(len(s)) + 8 + 2*12
		}
		if slot.hash == h {
			k := slot.code - 1
			if exact || bytes.Equal(c.data[c.offs[k]:c.offs[k+1]], s) {
				return k, true, 0
			}
		}
	}
}

// fill sets out[i] to the code of row i of a (not read under a NULL). Without insert, a value
// with no code sets absent[i] (absent then has a's length). It returns the bytes new codes hold.
func (c *stringCodes) fill(a *array.String, out []uint64, insert bool, absent []bool) int64 {
	offs := a.ValueOffsets()
	data := a.ValueBytes()
	base := offs[0]
	nulls := a.NullN() > 0
	added := int64(0)
	for i := range out {
		if nulls && a.IsNull(i) {
			continue
		}
		s := data[offs[i]-base : offs[i+1]-base]
		if len(s) == 1 {
			if k := c.byByte[s[0]]; k != 0 {
				out[i] = uint64(k - 1)
				continue
			}
		}
		k, ok, more := c.code(s, insert)
		if !ok {
			absent[i] = true
			continue
		}
		added += more
		out[i] = uint64(k)
	}
	return added
}

// grow doubles the table.
func (c *stringCodes) grow() {
	old := c.slots
	c.slots = make([]codeSlot, 2*len(old))
	c.shift--
	mask := uint64(len(c.slots) - 1)
	for _, s := range old {
		if s.code == 0 {
			continue
		}
		i := ((s.hash * 0x9E3779B97F4A7C15) >> c.shift) & mask
		for c.slots[i].code != 0 {
			i = (i + 1) & mask
		}
		c.slots[i] = s
	}
}
