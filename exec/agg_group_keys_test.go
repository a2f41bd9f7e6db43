package exec

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestGroupKeyMapMatchesEncodedKeys checks that a group key map gives two rows one group
// exactly when their row-key encodings are equal (NULLs grouping together), numbers groups in
// order of first appearance across batches, and that find returns the groups assign made and
// -1 for tuples it has not seen; with full hashes and with hashes cut to two bits (colliding).
func TestGroupKeyMapMatchesEncodedKeys(t *testing.T) {
	dec := &arrow.Decimal128Type{Precision: 38, Scale: 2}
	keySets := [][]arrow.DataType{
		{dec},
		{arrow.FixedWidthTypes.Boolean},
		{arrow.BinaryTypes.String},
		{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32},
		{arrow.PrimitiveTypes.Float64, dec, arrow.FixedWidthTypes.Date32},
		{arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64},
		{arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int8},
		{arrow.BinaryTypes.String, arrow.BinaryTypes.String},
		{arrow.PrimitiveTypes.Int16, arrow.BinaryTypes.String},
		manyInt8s(maxWordKeyColumns + 1),
	}
	for _, mask := range []uint64{^uint64(0), 3} {
		for seed, types := range keySets {
			t.Run(fmt.Sprintf("mask=%x/%.40v", mask, types), func(t *testing.T) {
				defer func(old uint64) { joinHashMask = old }(joinHashMask)
				joinHashMask = mask
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				rng := rand.New(rand.NewSource(int64(seed)))
				m := newGroupKeyMap(types)
				// Strings have a word form (their codes); more columns than the NULL word marks
				// are encoded.
				if wantWords := len(types) <= maxWordKeyColumns; (m.width > 0) != wantWords {
					t.Fatalf("width %d for %v", m.width, types)
				}
				want := map[string]uint32{}
				for batch := range 6 {
					n := 50 + batch*100
					cols := make([]arrow.Array, len(types))
					for i, ty := range types {
						cols[i] = randomKeyColumn(mem, rng, ty, n)
					}
					enc, err := NewRowKeyEncoder(cols)
					if err != nil {
						t.Fatal(err)
					}
					// find before assign: only tuples of earlier batches have groups.
					found := make([]int64, n)
					if err := m.find(cols, found); err != nil {
						t.Fatal(err)
					}
					for i := range n {
						id, ok := want[string(enc.Append(nil, i))]
						if w := int64(-1); ok && found[i] != int64(id) || !ok && found[i] != w {
							t.Fatalf("batch %d row %d: find gave %d, want %d (known %v)", batch, i, found[i], id, ok)
						}
					}
					ids := make([]uint32, n)
					next := uint32(len(want))
					added, err := m.assign(cols, ids, func(int) uint32 { next++; return next - 1 })
					if err != nil {
						t.Fatal(err)
					}
					before := len(want)
					for i := range n {
						key := string(enc.Append(nil, i))
						id, ok := want[key]
						if !ok {
							id = uint32(len(want))
							want[key] = id
						}
						if ids[i] != id {
							t.Fatalf("batch %d row %d (key %q): group %d, want %d", batch, i, key, ids[i], id)
						}
					}
					if m.n != len(want) || (added == 0) != (len(want) == before) {
						t.Fatalf("map holds %d groups (added %d bytes), want %d", m.n, added, len(want))
					}
					releaseAll(cols)
				}
			})
		}
	}
}

// TestGroupKeyMapGrows checks that tuples stay found as the table doubles past its first size.
func TestGroupKeyMapGrows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	types := []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64}
	m := newGroupKeyMap(types)
	n := 10 * groupKeyMapMinSlots
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{i, -i}
	}
	b := batchOf(t, mem, schemaOf("a", types[0], "b", types[1]), rows...)
	defer b.Release()
	ids := make([]uint32, n)
	next := uint32(0)
	if _, err := m.assign(b.Columns(), ids, func(int) uint32 { next++; return next - 1 }); err != nil {
		t.Fatal(err)
	}
	if len(m.slots) <= groupKeyMapMinSlots {
		t.Fatalf("table of %d slots for %d groups did not grow", len(m.slots), n)
	}
	found := make([]int64, n)
	if err := m.find(b.Columns(), found); err != nil {
		t.Fatal(err)
	}
	for i, id := range found {
		if id != int64(i) {
			t.Fatalf("row %d: group %d after growing, want %d", i, id, i)
		}
	}
}

func manyInt8s(n int) []arrow.DataType {
	out := make([]arrow.DataType, n)
	for i := range out {
		out[i] = arrow.PrimitiveTypes.Int8
	}
	return out
}
