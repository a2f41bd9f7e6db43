package exec

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TakeRowRefs gives, row for row, what the referenced rows of the sources are, for every layout
// it handles, with NULLs and sliced sources; it declines the others.
func TestTakeRowRefs(t *testing.T) {
	cases := []struct {
		dt     arrow.DataType
		js     string
		handle bool
	}{
		{i64, `[1, null, 3, 4, 5, null, 7, 8, 9, 10, 11, 12]`, true},
		{f64, `[1.5, 2.5, null, 4, 5, 6, 7, 8, 9, 10, 11, 12]`, true},
		{arrow.PrimitiveTypes.Float32, `[1.5, 2.5, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]`, true},
		{arrow.PrimitiveTypes.Int16, `[1, 2, 3, null, 5, 6, 7, 8, 9, 10, 11, 12]`, true},
		{arrow.PrimitiveTypes.Uint8, `[1, 2, 3, null, 5, 6, 7, 8, 9, 10, 11, 12]`, true},
		{dec(12, 2), `["1.50", null, "-3.25", "4.00", "5", "6", "7", "8", "9", "10", "11", "12"]`, true},
		{&arrow.FixedSizeBinaryType{ByteWidth: 3}, `["YWJj", "ZGVm", null, "Z2hp", "amts", "bW5v", "cHFy", "c3R1", "dnd4", "eXph", "QUJD", "REVG"]`, true},
		{arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), `[[1, 2], [3, 4], null, [5, 6], [7, 8], [9, 10], [11, 12], [13, 14], [15, 16], [17, 18], [19, 20], [21, 22]]`, false}, // a NULL list has NULL elements
		{arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), `[[1, 2], [3, 4], [0, 0], [5, 6], [7, 8], [9, 10], [11, 12], [13, 14], [15, 16], [17, 18], [19, 20], [21, 22]]`, true},
		{arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Int64), `[[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 1, 1], [2, 2, 2], [3, 3, 3], [4, 4, 4], [5, 5, 5], [6, 6, 6], [7, 7, 7], [8, 8, 8], [9, 9, 9]]`, true},
		{arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int32), `[[1, null], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12], [13, 14], [15, 16], [17, 18], [19, 20], [21, 22], [23, 24]]`, false},
		{bln, `[true, false, null, true, true, false, false, true, null, true, true, false]`, false},
		{str, `["a", "", null, "ccc", "dddd", "e", "ff", null, "ggg", "h", "i", "j"]`, false},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		t.Run(c.dt.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			whole, _, err := array.FromJSON(mem, c.dt, strings.NewReader(c.js))
			if err != nil {
				t.Fatal(err)
			}
			defer whole.Release()
			// Three sources: the whole array and two slices of it (offsets that are not 0).
			sources := []arrow.Array{whole, array.NewSlice(whole, 3, 12), array.NewSlice(whole, 5, 9)}
			defer sources[1].Release()
			defer sources[2].Release()
			refs := make([]RowRef, 200)
			for i := range refs {
				a := rng.IntN(len(sources))
				refs[i] = RowRef{Array: int32(a), Row: int32(rng.IntN(sources[a].Len()))}
			}
			got := TakeRowRefs(mem, sources, refs)
			if !c.handle {
				if got != nil {
					got.Release()
					t.Fatalf("%s: expected no typed gather", c.dt)
				}
				return
			}
			if got == nil {
				t.Fatalf("%s: no typed gather", c.dt)
			}
			defer got.Release()
			if got.Len() != len(refs) || !arrow.TypeEqual(got.DataType(), c.dt) {
				t.Fatalf("got %d rows of %s", got.Len(), got.DataType())
			}
			for i, r := range refs {
				want := sources[r.Array].GetOneForMarshal(int(r.Row))
				if g := got.GetOneForMarshal(i); fmt.Sprint(g) != fmt.Sprint(want) || got.IsNull(i) != sources[r.Array].IsNull(int(r.Row)) {
					t.Fatalf("row %d (%v): got %v, want %v", i, r, g, want)
				}
			}
		})
	}
	if TakeRowRefs(memory.DefaultAllocator, nil, nil) != nil {
		t.Fatal("no sources: expected nil")
	}
}
