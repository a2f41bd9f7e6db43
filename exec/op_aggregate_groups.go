package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// aggGroupTable assigns dense group ids (0, 1, 2, … in order of first appearance) to the distinct
// key tuples of the batches it sees, and keeps the key values of each group for the output.
//
// Keys are compared by their row-key encoding (NULLs equal, -0 = +0); a single int64 key uses a
// map on the integer itself. With no key columns there is exactly one group, id 0, from the start,
// so a global aggregate yields one row even for empty input.
type aggGroupTable struct {
	types  []arrow.DataType
	n      int
	ids    map[string]uint32
	intIDs map[int64]uint32
	nullID int64 // group id of the NULL key for the int64 fast path, -1 until seen
	key    []byte
	ids32  []uint32
	newRow []int32
	chunks [][]arrow.Array // per key column: the key values of the groups each batch created
}

func newAggGroupTable(types []arrow.DataType) *aggGroupTable {
	t := &aggGroupTable{
		types:  types,
		ids:    map[string]uint32{},
		intIDs: map[int64]uint32{},
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
	if ints, ok := keys[0].(*array.Int64); ok && len(keys) == 1 {
		t.assignInt64(ints, ids)
	} else if err := t.assignEncoded(keys, ids); err != nil {
		return nil, err
	}
	if len(t.newRow) == 0 {
		return ids, nil
	}
	return ids, t.keepNewKeys(ctx, mem, keys)
}

func (t *aggGroupTable) assignInt64(keys *array.Int64, ids []uint32) {
	vals := keys.Int64Values()
	nulls := keys.NullN() > 0
	for i, v := range vals {
		if nulls && keys.IsNull(i) {
			if t.nullID < 0 {
				t.nullID = int64(t.newGroup(i))
			}
			ids[i] = uint32(t.nullID)
			continue
		}
		id, ok := t.intIDs[v]
		if !ok {
			id = t.newGroup(i)
			t.intIDs[v] = id
		}
		ids[i] = id
	}
}

func (t *aggGroupTable) assignEncoded(keys []arrow.Array, ids []uint32) error {
	enc, err := NewRowKeyEncoder(keys)
	if err != nil {
		return err
	}
	for i := range ids {
		t.key = enc.Append(t.key[:0], i)
		id, ok := t.ids[string(t.key)]
		if !ok {
			id = t.newGroup(i)
			t.ids[string(t.key)] = id
		}
		ids[i] = id
	}
	return nil
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
	b := array.NewInt32Builder(mem)
	b.AppendValues(t.newRow, nil)
	indices := b.NewArray()
	b.Release()
	defer indices.Release()
	cctx := compute.WithAllocator(ctx, mem)
	for c, key := range keys {
		taken, err := compute.TakeArray(cctx, key, indices)
		if err != nil {
			return err
		}
		t.chunks[c] = append(t.chunks[c], taken)
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
