package exec

import (
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// denseGroups finds the group of a tuple of string keys with few distinct values (TPC-H Q1's
// return flag and line status, Q12's ship mode) by indexing a small table with the tuple's
// codes, packed side by side in an index of at most denseGroupMaxBits bits, instead of hashing
// and comparing the tuple's words. It is an index over the groupKeyMap it belongs to, which
// stays the record of the groups: the table holds, for every index, the id of the map's group
// of that tuple (+1, 0 for none), covering the map's groups without a NULL key up to covered.
type denseGroups struct {
	bits    []int    // per key column: the bits its codes take (a column's first in the index is its highest)
	ids     []uint32 // group id + 1 by index
	covered int      // the table holds the index of every group below covered that has no NULL key
	codes   [][]uint64
	index   []uint32
}

// denseGroupMaxBits bounds the index: a table of 2^14 ids is 64 KiB.
const denseGroupMaxBits = 14

// denseApplies reports whether the batch cols can be grouped through the dense index: every key
// column is a string (coded) column, none of this batch's keys is NULL, and the codes have not
// outgrown the index before.
func (m *groupKeyMap) denseApplies(cols []arrow.Array) bool {
	if m.width == 0 || m.denseOff || m.strs == nil || len(cols) != m.width-1 {
		return false
	}
	for c, col := range cols {
		if m.strs[c] == nil || col.NullN() > 0 {
			return false
		}
		if _, ok := col.(*array.String); !ok {
			return false
		}
	}
	return true
}

// assignDense is assign through the dense index; it reports false, having given the batch's
// values their codes (their bytes counted in m.codeBytes) but no group, when the codes have
// outgrown the index, which then is off for good (codes are never taken back).
func (m *groupKeyMap) assignDense(cols []arrow.Array, ids []uint32, newGroup func(row int) uint32) (int64, bool, error) {
	if m.dense == nil {
		m.dense = &denseGroups{codes: make([][]uint64, len(cols))}
	}
	d := m.dense
	rows := len(ids)
	for c, col := range cols {
		d.codes[c] = resize(d.codes[c], rows)
		m.codeBytes += m.strs[c].fill(col.(*array.String), d.codes[c], true, nil)
	}
	total := 0
	changed := len(d.bits) != len(cols)
	if changed {
		d.bits = make([]int, len(cols))
	}
	for c := range cols {
		b := bits.Len(uint(max(m.strs[c].len()-1, 0)))
		if b != d.bits[c] {
			d.bits[c], changed = b, true
		}
		total += b
	}
	if total > denseGroupMaxBits {
		m.denseOff, m.dense = true, nil
		return 0, false, nil
	}
	if changed {
		d.ids = make([]uint32, 1<<total)
		d.covered = 0
	}
	w := m.width
	for ; d.covered < m.n; d.covered++ {
		if tuple := m.keys[d.covered*w : (d.covered+1)*w]; tuple[0] == 0 {
			d.ids[d.indexOf(tuple[1:])] = uint32(d.covered) + 1
		}
	}
	d.index = resize(d.index, rows)
	clear(d.index)
	shift := total
	for c := range cols {
		shift -= d.bits[c]
		for i, code := range d.codes[c] {
			d.index[i] |= uint32(code) << shift
		}
	}
	added := m.codeBytes
	m.codeBytes = 0
	tuple := make([]uint64, w)
	for i, x := range d.index {
		if id := d.ids[x]; id != 0 {
			ids[i] = id - 1
			continue
		}
		for c := range cols {
			tuple[c+1] = d.codes[c][i]
		}
		id, more, err := m.addTuple(tuple, i, newGroup)
		if err != nil {
			return 0, true, err
		}
		added += more
		d.ids[x] = id + 1
		d.covered = m.n
		ids[i] = id
	}
	return added, true, nil
}

// indexOf packs the codes of one tuple (its words after the NULL word) into its index.
func (d *denseGroups) indexOf(codes []uint64) uint32 {
	x := uint32(0)
	for c, code := range codes {
		x = x<<d.bits[c] | uint32(code)
	}
	return x
}

// addTuple returns the group of the word tuple (NULL word first) of row of the current batch,
// creating it, as assign does, when the map has none.
func (m *groupKeyMap) addTuple(tuple []uint64, row int, newGroup func(row int) uint32) (uint32, int64, error) {
	h := hashWords(tuple)
	mask := uint64(len(m.slots) - 1)
	w := m.width
	i := ((h * 0x9E3779B97F4A7C15) >> m.shift) & mask
	for ; m.slots[i].id != 0; i = (i + 1) & mask {
		if s := m.slots[i]; s.hash == h && equalWords(m.keys[int(s.id-1)*w:int(s.id)*w], tuple) {
			return s.id - 1, 0, nil
		}
	}
	id := newGroup(row)
	if int(id) != m.n {
		return 0, 0, errs.Internalf("group key map holds %d groups, was given id %d", m.n, id)
	}
	m.slots[i] = groupSlot{hash: h, id: id + 1}
	m.keys = append(m.keys, tuple...)
	m.n++
	if 3*m.n > 2*len(m.slots) {
		m.grow()
	}
	return id, m.tupleBytes(m.n - 1), nil
}

func equalWords(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
