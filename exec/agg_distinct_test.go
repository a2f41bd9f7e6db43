package exec

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// COUNT(DISTINCT x) per group counts the values distinct under the row-key encoding (-0 = +0,
// every NaN equal, decimals by value), NULLs left out, across batches: for arguments keyed by
// their words and for encoded ones.
func TestDistinctCountsMatchEncodedKeys(t *testing.T) {
	dec := &arrow.Decimal128Type{Precision: 38, Scale: 2}
	for seed, ty := range []arrow.DataType{
		arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Float64, dec,
		arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.String,
	} {
		t.Run(fmt.Sprint(ty), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rng := rand.New(rand.NewSource(int64(seed)))
			const groups = 4
			acc := newAggDistinct(&aggCount{})
			acc.grow(groups)
			want := make([]map[string]bool, groups)
			for g := range want {
				want[g] = map[string]bool{}
			}
			for range 3 {
				n := 200
				col := randomKeyColumn(mem, rng, ty, n)
				enc, err := NewRowKeyEncoder([]arrow.Array{col})
				if err != nil {
					t.Fatal(err)
				}
				ids := make([]uint32, n)
				for i := range ids {
					ids[i] = uint32(rng.Intn(groups))
					if !enc.HasNull(i) {
						want[ids[i]][string(enc.Append(binary.AppendUvarint(nil, 0), i))] = true
					}
				}
				if err := acc.update(ids, []arrow.Array{col}); err != nil {
					t.Fatal(err)
				}
				col.Release()
			}
			out, err := acc.finish(mem)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Release()
			counts := out.(*array.Int64)
			for g := range groups {
				if got := counts.Value(g); got != int64(len(want[g])) {
					t.Errorf("group %d: %d distinct, want %d", g, got, len(want[g]))
				}
			}
		})
	}
}
