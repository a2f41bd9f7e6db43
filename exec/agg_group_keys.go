package exec

import (
	"bytes"
	"hash/maphash"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// groupKeyMap maps the key tuples of an aggregate's group keys, when there are several key
// columns or the one column has no 64-bit form, to dense group ids: the ids its caller hands
// out, 0, 1, 2, … in the order the map meets new tuples.
//
// Tuples compare as the row-key encoding does (NULLs equal to each other, -0 = +0, every NaN
// equal). When every key type has a word form (see keyWords), or is a string (its word is the
// value's code in a stringCodes of the column), a tuple is its columns' 64-bit words (0 under a
// NULL) after one word whose bit c marks a NULL in column c; otherwise it is row-key encoded. Words compare exactly: the columns of one aggregate's keys have one type
// each, so equal decimals have equal unscaled words. The table is open addressing with linear
// probing over (hash, id) slots, at most two thirds full, and keeps each group's tuple to
// confirm hash matches: where a Go map of encoded strings hashed, compared and, growing,
// rehashed a string per row.
type groupKeyMap struct {
	width int // words per tuple, the NULL word included; 0 for encoded tuples
	// strs numbers the values of each string key column (nil for the other columns).
	strs  []*stringCodes
	slots []groupSlot
	shift uint
	n     int // groups
	// keys holds the groups' tuples: group g's words are keys[g*width:(g+1)*width], or its
	// encoded bytes data[offs[g]:offs[g+1]].
	keys []uint64
	data []byte
	offs []int

	// Per batch: the tuple of each row (row-major words, or encoded bytes) and its hash.
	rowWords []uint64
	rowData  []byte
	rowOffs  []int
	hashes   []uint64
	col      []uint64
	colHi    []uint64
	// absent marks, when looking up without adding (find), the rows with a string value that
	// has no code: no group has their tuple. codeBytes is what the codes given hold.
	absent    []bool
	codeBytes int64

	// dense indexes the groups of string tuples by their codes while they have few values;
	// denseOff is set once they have too many (see denseGroups).
	dense    *denseGroups
	denseOff bool
}

type groupSlot struct {
	hash uint64
	id   uint32 // group id + 1; 0 marks an empty slot
}

// groupKeyMapMinSlots is the initial table size.
const groupKeyMapMinSlots = 256

// maxWordKeyColumns bounds the key columns of word tuples: one NULL word marks them.
const maxWordKeyColumns = 64

// newGroupKeyMap returns the map for key columns of types.
func newGroupKeyMap(types []arrow.DataType) *groupKeyMap {
	m := &groupKeyMap{}
	words := 0
	for _, t := range types {
		w := keyWords(t)
		if t.ID() == arrow.STRING {
			w = 1
		}
		if w == 0 {
			words = 0
			break
		}
		words += w
	}
	if words > 0 && len(types) <= maxWordKeyColumns {
		m.width = words + 1
		for c, t := range types {
			if t.ID() == arrow.STRING {
				if m.strs == nil {
					m.strs = make([]*stringCodes, len(types))
				}
				m.strs[c] = newStringCodes()
			}
		}
	}
	m.slots = make([]groupSlot, groupKeyMapMinSlots)
	m.shift = 64 - 8
	return m
}

// tupleBytes is what one group's tuple holds in the map (not counting its slot).
func (m *groupKeyMap) tupleBytes(g int) int64 {
	if m.width > 0 {
		return int64(8 * m.width)
	}
	return int64(m.offs[g+1] - m.offs[g])
}

// prepare computes the tuples and hashes of the rows of cols. Without insert, string values
// get no new codes: the rows holding one are marked absent.
func (m *groupKeyMap) prepare(cols []arrow.Array, rows int, insert bool) error {
	m.hashes = resize(m.hashes, rows)
	if m.width == 0 {
		enc, err := NewRowKeyEncoder(cols)
		if err != nil {
			return err
		}
		m.rowData = m.rowData[:0]
		m.rowOffs = resize(m.rowOffs, rows+1)
		m.rowOffs[0] = 0
		for i := range rows {
			m.rowData = enc.Append(m.rowData, i)
			m.rowOffs[i+1] = len(m.rowData)
			m.hashes[i] = maphash.Bytes(joinHashSeed, m.rowData[m.rowOffs[i]:m.rowOffs[i+1]]) & joinHashMask
		}
		return nil
	}
	w := m.width
	if !insert && m.strs != nil {
		m.absent = resize(m.absent, rows)
		clear(m.absent)
	}
	m.rowWords = resize(m.rowWords, rows*w)
	for i := range rows {
		m.rowWords[i*w] = 0
	}
	at := 1
	for c, col := range cols {
		var codes *stringCodes
		if m.strs != nil {
			codes = m.strs[c]
		}
		cw := keyWords(col.DataType())
		if codes != nil {
			cw = 1
		}
		if cw == 0 || at+cw > w {
			return errs.Internalf("group key column of type %s does not fit the aggregate's %d key words", col.DataType(), w-1)
		}
		m.col = resize(m.col, rows)
		var hi []uint64
		if cw == 2 {
			m.colHi = resize(m.colHi, rows)
			hi = m.colHi
		}
		if codes != nil {
			str, ok := col.(*array.String)
			if !ok {
				return errs.Internalf("group key column %d is %s, the aggregate's key type is a string", c, col.DataType())
			}
			m.codeBytes += codes.fill(str, m.col[:rows], insert, m.absent)
		} else if err := fillWords(col, m.col, hi); err != nil {
			return err
		}
		nulls := col.NullN() > 0
		for i := range rows {
			row := m.rowWords[i*w : (i+1)*w]
			if nulls && col.IsNull(i) {
				row[0] |= 1 << c
				row[at] = 0
				if cw == 2 {
					row[at+1] = 0
				}
				continue
			}
			row[at] = m.col[i]
			if cw == 2 {
				row[at+1] = hi[i]
			}
		}
		at += cw
	}
	if at != w {
		return errs.Internalf("group key columns give %d words, the aggregate's key types %d", at-1, w-1)
	}
	for i := range rows {
		m.hashes[i] = hashWords(m.rowWords[i*w : (i+1)*w])
	}
	return nil
}

// hashWords is the hash of a word tuple.
func hashWords(tuple []uint64) uint64 {
	h := uint64(0x13198A2E03707344)
	for _, x := range tuple {
		h = mixWord(h, x)
	}
	return finishHash(h) & joinHashMask
}

// sameAs reports whether group g's tuple is row's of the prepared batch.
func (m *groupKeyMap) sameAs(g uint32, row int) bool {
	if m.width == 0 {
		return bytes.Equal(m.data[m.offs[g]:m.offs[g+1]], m.rowData[m.rowOffs[row]:m.rowOffs[row+1]])
	}
	w := m.width
	a, b := m.keys[int(g)*w:int(g+1)*w], m.rowWords[row*w:(row+1)*w]
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// lookup returns the slot of row's tuple in the prepared batch: the group's, or the empty slot
// where it would go.
func (m *groupKeyMap) lookup(row int) *groupSlot {
	h := m.hashes[row]
	mask := uint64(len(m.slots) - 1)
	for i := ((h * 0x9E3779B97F4A7C15) >> m.shift) & mask; ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.id == 0 || (s.hash == h && m.sameAs(s.id-1, row)) {
			return s
		}
	}
}

// assign sets ids[i] to the group of row i of cols, calling newGroup(i) for a tuple not seen
// before; newGroup must return the map's next id (0, 1, 2, …). It returns the bytes the new
// groups' tuples hold.
func (m *groupKeyMap) assign(cols []arrow.Array, ids []uint32, newGroup func(row int) uint32) (int64, error) {
	if m.denseApplies(cols) {
		if added, ok, err := m.assignDense(cols, ids, newGroup); ok || err != nil {
			return added, err
		}
	}
	if err := m.prepare(cols, len(ids), true); err != nil {
		return 0, err
	}
	added := m.codeBytes
	m.codeBytes = 0
	for i := range ids {
		s := m.lookup(i)
		if s.id != 0 {
			ids[i] = s.id - 1
			continue
		}
		id := newGroup(i)
		if int(id) != m.n {
			return 0, errs.Internalf("group key map holds %d groups, was given id %d", m.n, id)
		}
		s.hash, s.id = m.hashes[i], id+1
		if m.width > 0 {
			m.keys = append(m.keys, m.rowWords[i*m.width:(i+1)*m.width]...)
		} else {
			if m.offs == nil {
				m.offs = []int{0}
			}
			m.data = append(m.data, m.rowData[m.rowOffs[i]:m.rowOffs[i+1]]...)
			m.offs = append(m.offs, len(m.data))
		}
		added += m.tupleBytes(m.n)
		m.n++
		ids[i] = id
		if 3*m.n > 2*len(m.slots) {
			m.grow()
		}
	}
	return added, nil
}

// find sets out[i] to the group of row i of cols, or -1 when its tuple has none.
func (m *groupKeyMap) find(cols []arrow.Array, out []int64) error {
	if err := m.prepare(cols, len(out), false); err != nil {
		return err
	}
	for i := range out {
		out[i] = -1
		if m.absent != nil && m.absent[i] {
			continue
		}
		if s := m.lookup(i); s.id != 0 {
			out[i] = int64(s.id - 1)
		}
	}
	return nil
}

// grow doubles the table.
func (m *groupKeyMap) grow() {
	old := m.slots
	m.slots = make([]groupSlot, 2*len(old))
	m.shift--
	mask := uint64(len(m.slots) - 1)
	for _, s := range old {
		if s.id == 0 {
			continue
		}
		i := ((s.hash * 0x9E3779B97F4A7C15) >> m.shift) & mask
		for m.slots[i].id != 0 {
			i = (i + 1) & mask
		}
		m.slots[i] = s
	}
}
