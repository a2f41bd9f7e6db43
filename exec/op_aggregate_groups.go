package exec

import (
	"context"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/util"
)

// aggGroupTable assigns dense group ids (0, 1, 2, … in order of first appearance) to the distinct
// key tuples of the batches it sees, and keeps the key values of each group for the output.
//
// Keys are compared as their row-key encoding does (NULLs equal, -0 = +0, every NaN equal): a
// single key of a fixed-width type (int64, date32, timestamp, float64) is looked up by its
// 64-bit value in a fixedKeyMap, other keys by their tuple in a groupKeyMap. With no key
// columns there is exactly one group, id 0, from the start, so a global aggregate yields one
// row even for empty input.
type aggGroupTable struct {
	types  []arrow.DataType
	n      int
	tuples *groupKeyMap // created on first use
	fixed  fixedKeyMap
	nullID int64 // group id of the NULL key for the fixed-width path, -1 until seen
	keyBuf []uint64
	ids32  []uint32
	newRow []int32
	chunks [][]arrow.Array // per key column: the key values of the groups each batch created
	// keyBytes is the size of chunks' buffers plus, per tuple, its bytes in tuples.
	keyBytes int64
}

// heldBytes estimates what the table holds: the kept key values, the tuples and the map
// entries (aggMapEntryBytes per group: a slot of either map at its fullest).
func (t *aggGroupTable) heldBytes() int64 { return t.keyBytes + int64(t.n)*aggMapEntryBytes }

func newAggGroupTable(types []arrow.DataType) *aggGroupTable {
	t := &aggGroupTable{
		types:  types,
		nullID: -1,
		chunks: make([][]arrow.Array, len(types)),
	}
	if len(types) == 0 {
		t.n = 1
	}
	return t
}

// len is the number of groups so far.
func (t *aggGroupTable) len() int { return t.n }

// assign returns the group id of each of the rows of keys (valid until the next call), creating
// groups for key tuples not seen before.
func (t *aggGroupTable) assign(ctx context.Context, mem memory.Allocator, keys []arrow.Array, rows int) ([]uint32, error) {
	if cap(t.ids32) < rows {
		t.ids32 = make([]uint32, rows)
	}
	ids := t.ids32[:rows]
	if len(keys) == 0 {
		clear(ids)
		return ids, nil
	}
	t.newRow = t.newRow[:0]
	if len(keys) != 1 || !t.assignFixed(keys[0], ids) {
		if err := t.assignTuples(keys, ids); err != nil {
			return nil, err
		}
	}
	if len(t.newRow) == 0 {
		return ids, nil
	}
	return ids, t.keepNewKeys(ctx, mem, keys)
}

// find returns the group id of each of the rows of keys, or -1 for a key tuple that has no
// group; it creates none. It follows assign's choice of key form, so it finds exactly the
// groups assign would reuse.
func (t *aggGroupTable) find(keys []arrow.Array, rows int) ([]int64, error) {
	out := make([]int64, rows)
	if len(keys) == 0 {
		return out, nil
	}
	if len(keys) == 1 {
		if bits, ok := t.fixedKeys(keys[0]); ok {
			nulls := keys[0].NullN() > 0
			for i, k := range bits {
				out[i] = -1
				if nulls && keys[0].IsNull(i) {
					out[i] = t.nullID
				} else if id, ok := t.fixed.find(k); ok {
					out[i] = int64(id)
				}
			}
			return out, nil
		}
	}
	if err := t.tupleMap().find(keys, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (t *aggGroupTable) tupleMap() *groupKeyMap {
	if t.tuples == nil {
		t.tuples = newGroupKeyMap(t.types)
	}
	return t.tuples
}

// assignFixed assigns the ids of a single fixed-width key column and reports true, or reports
// false, doing nothing, when the column's type has no 64-bit key form.
func (t *aggGroupTable) assignFixed(key arrow.Array, ids []uint32) bool {
	keys, ok := t.fixedKeys(key)
	if !ok {
		return false
	}
	t.assignKeys(key, keys, ids)
	return true
}

// fixedKeys returns the 64-bit keys of a single fixed-width key column (valid until the next
// call), or false when its type has no 64-bit key form.
func (t *aggGroupTable) fixedKeys(key arrow.Array) ([]uint64, bool) {
	var keys []uint64
	switch k := key.(type) {
	case *array.Int64:
		keys = int64Bits(k.Int64Values())
	case *array.Timestamp:
		keys = int64Bits(arrow.Int64Traits.CastFromBytes(arrow.TimestampTraits.CastToBytes(k.TimestampValues())))
	case *array.Date32:
		keys = t.scratchKeys(k.Len())
		for i, v := range k.Date32Values() {
			keys[i] = uint64(v)
		}
	case *array.Float64:
		keys = t.scratchKeys(k.Len())
		for i, v := range k.Float64Values() {
			keys[i] = floatKeyBits(v)
		}
	default:
		return nil, false
	}
	return keys, true
}

// int64Bits views int64 values as their two's complement bits, without copying.
func int64Bits(vals []int64) []uint64 {
	if len(vals) == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(vals))), len(vals))
}

// scratchKeys returns a reusable key buffer of n elements.
func (t *aggGroupTable) scratchKeys(n int) []uint64 {
	if cap(t.keyBuf) < n {
		t.keyBuf = make([]uint64, n)
	}
	return t.keyBuf[:n]
}

// floatKeyBits is the 64-bit key of a float64 group value: -0 and +0 share one key, and so do
// all NaNs, as in the row-key encoding.
func floatKeyBits(v float64) uint64 {
	switch {
	case v == 0:
		return 0
	case v != v:
		return 0x7FF8000000000001
	}
	return math.Float64bits(v)
}

// assignKeys looks up every row's 64-bit key (keys[i] for row i of arr), creating groups for new
// keys; NULL rows of arr share one group. A row whose key is the row before's takes its group
// without a lookup: tables stored sorted or clustered by the key (TPC-H's lineitem by
// l_orderkey) hand in runs of equal keys, whose lookups miss the cache once the table is large.
func (t *aggGroupTable) assignKeys(arr arrow.Array, keys []uint64, ids []uint32) {
	nulls := arr.NullN() > 0
	m := &t.fixed
	var prevKey uint64
	var prevID uint32
	havePrev := false
	for i, k := range keys {
		if nulls && arr.IsNull(i) {
			if t.nullID < 0 {
				t.nullID = int64(t.newGroup(i))
			}
			ids[i] = uint32(t.nullID)
			havePrev = false
			continue
		}
		if havePrev && k == prevKey {
			ids[i] = prevID
			continue
		}
		id, ok := m.get(k)
		if !ok {
			var found bool
			if id, found = m.lookupOrInsert(k, uint32(t.n)); !found {
				t.newGroup(i)
			}
		}
		ids[i] = id
		prevKey, prevID, havePrev = k, id, true
	}
}

// assignTuples assigns the ids of keys through the tuple map.
func (t *aggGroupTable) assignTuples(keys []arrow.Array, ids []uint32) error {
	added, err := t.tupleMap().assign(keys, ids, t.newGroup)
	t.keyBytes += added
	return err
}

// newGroup creates a group whose key is at row of the current batch.
func (t *aggGroupTable) newGroup(row int) uint32 {
	id := uint32(t.n)
	t.n++
	t.newRow = append(t.newRow, int32(row))
	return id
}

// keepNewKeys copies the key values of the groups the current batch created.
func (t *aggGroupTable) keepNewKeys(ctx context.Context, mem memory.Allocator, keys []arrow.Array) error {
	taken, err := takeColumns(ctx, &TaskContext{Alloc: mem}, keys, t.newRow)
	if err != nil {
		return err
	}
	for c, col := range taken {
		t.chunks[c] = append(t.chunks[c], col)
		t.keyBytes += util.TotalArraySize(col)
	}
	return nil
}

// keyColumns returns the key values of groups 0..len()-1, one array per key column; the caller
// releases them.
func (t *aggGroupTable) keyColumns(mem memory.Allocator) ([]arrow.Array, error) {
	out := make([]arrow.Array, 0, len(t.types))
	for c, dt := range t.types {
		var col arrow.Array
		var err error
		switch len(t.chunks[c]) {
		case 0:
			b := array.NewBuilder(mem, dt)
			col = b.NewArray()
			b.Release()
		case 1:
			col = t.chunks[c][0]
			col.Retain()
		default:
			col, err = array.Concatenate(t.chunks[c], mem)
		}
		if err != nil {
			for _, a := range out {
				a.Release()
			}
			return nil, err
		}
		out = append(out, col)
	}
	return out, nil
}

// release frees the kept key values.
func (t *aggGroupTable) release() {
	for _, chunks := range t.chunks {
		for _, a := range chunks {
			a.Release()
		}
	}
	t.chunks = nil
}
