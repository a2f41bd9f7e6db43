package exec

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Tuples of string keys are grouped through the dense index exactly as by their row-key
// encodings: across batches with and without NULL keys (those take the hashed path, and the
// index catches up on their groups), as the values grow the index (more bits per column) and
// past the index's size (it is then off and the hashed path carries on), with one-byte, empty
// and longer values.
func TestDenseGroupsMatchEncodedKeys(t *testing.T) {
	for _, width := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rng := rand.New(rand.NewSource(int64(width)))
			types := make([]arrow.DataType, width)
			for c := range types {
				types[c] = arrow.BinaryTypes.String
			}
			m := newGroupKeyMap(types)
			want := map[string]uint32{}
			usedDense, usedOff := false, false
			for batch := range 16 {
				distinct := 2 << batch // values per column: grows past what the index holds
				withNulls := batch%3 == 2
				n := 1000 + 500*batch
				cols := make([]arrow.Array, width)
				for c := range cols {
					b := array.NewStringBuilder(mem)
					for range n {
						if withNulls && rng.Intn(6) == 0 {
							b.AppendNull()
							continue
						}
						switch v := rng.Intn(distinct); {
						case v == 0:
							b.Append("")
						case v < 20:
							b.Append(string(rune('A' + v)))
						default:
							b.Append(fmt.Sprintf("value %d", v))
						}
					}
					cols[c] = b.NewArray()
					b.Release()
				}
				dense := m.denseApplies(cols)
				enc, err := NewRowKeyEncoder(cols)
				if err != nil {
					t.Fatal(err)
				}
				ids := make([]uint32, n)
				next := uint32(len(want))
				if _, err := m.assign(cols, ids, func(int) uint32 { next++; return next - 1 }); err != nil {
					t.Fatal(err)
				}
				usedDense = usedDense || dense && m.dense != nil
				usedOff = usedOff || m.denseOff
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
				if m.n != len(want) {
					t.Fatalf("batch %d: map holds %d groups, want %d", batch, m.n, len(want))
				}
				found := make([]int64, n)
				if err := m.find(cols, found); err != nil {
					t.Fatal(err)
				}
				for i := range n {
					if found[i] != int64(ids[i]) {
						t.Fatalf("batch %d row %d: find gave %d, assign %d", batch, i, found[i], ids[i])
					}
				}
				releaseAll(cols)
			}
			if !usedDense || !usedOff {
				t.Fatalf("dense index used %v, turned off %v: want both", usedDense, usedOff)
			}
		})
	}
}
