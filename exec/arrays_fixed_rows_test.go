package exec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Fixed-size rows: which layouts have them, and gathering them as bytes gives, row for row,
// the source's rows, for the whole array and for slices of it.
func TestFixedRows(t *testing.T) {
	cases := []struct {
		dt    arrow.DataType
		js    string
		fixed bool // has fixed-size rows without NULLs (every slice below holds row 6)
	}{
		{i64, `[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]`, true},
		{i64, `[1, 2, 3, 4, 5, 6, null, 8, 9, 10, 11, 12]`, false},
		{arrow.PrimitiveTypes.Float32, `[1.5, 2.5, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]`, true},
		{arrow.PrimitiveTypes.Int16, `[1, 2, 3, -4, 5, 6, 7, 8, 9, 10, 11, 12]`, true},
		{arrow.PrimitiveTypes.Uint8, `[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 255]`, true},
		{dec(12, 2), `["1.50", "2", "-3.25", "4.00", "5", "6", "7", "8", "9", "10", "11", "12"]`, true},
		{&arrow.FixedSizeBinaryType{ByteWidth: 3}, `["YWJj", "ZGVm", "Z2hp", "Z2hp", "amts", "bW5v", "cHFy", "c3R1", "dnd4", "eXph", "QUJD", "REVG"]`, true},
		{arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), `[[1, 2], [3, 4], [0, 0], [5, 6], [7, 8], [9, 10], [11, 12], [13, 14], [15, 16], [17, 18], [19, 20], [21, 22]]`, true},
		{arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Int64), `[[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 1, 1], [2, 2, 2], [3, 3, 3], [4, 4, 4], [5, 5, 5], [6, 6, 6], [7, 7, 7], [8, 8, 8], [9, 9, 9]]`, true},
		{arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), `[[1, 2], [3, 4], [0, 0], [5, 6], [7, 8], [9, 10], null, [13, 14], [15, 16], [17, 18], [19, 20], [21, 22]]`, false},
		{arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int32), `[[1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12], [13, null], [15, 16], [17, 18], [19, 20], [21, 22], [23, 24]]`, false},
		{bln, `[true, false, true, true, true, false, false, true, false, true, true, false]`, false},
		{str, `["a", "", "b", "ccc", "dddd", "e", "ff", "g", "ggg", "h", "i", "j"]`, false},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		t.Run(c.dt.String()+"/"+c.js[:12], func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			whole, _, err := array.FromJSON(mem, c.dt, strings.NewReader(c.js))
			if err != nil {
				t.Fatal(err)
			}
			defer whole.Release()
			for _, bounds := range [][2]int64{{0, 12}, {3, 12}, {5, 9}} {
				src := array.NewSlice(whole, bounds[0], bounds[1])
				rows, ok := FixedRowBytes(src)
				if ok != c.fixed {
					src.Release()
					t.Fatalf("slice %v: FixedRowBytes ok = %v, want %v", bounds, ok, c.fixed)
				}
				if ok {
					if len(rows) != src.Len()*FixedRowWidth(c.dt) {
						t.Fatalf("slice %v: %d bytes for %d rows of %d", bounds, len(rows), src.Len(), FixedRowWidth(c.dt))
					}
					idx := make([]int32, 50)
					for i := range idx {
						idx[i] = int32(rng.IntN(src.Len()))
					}
					got := TakeFixedRows(mem, c.dt, rows, idx)
					sameRows(t, got, src, idx)
					// Taken in runs from two sources holding the same rows: the same rows.
					var runs []SourceRun
					for at := 0; at < len(idx); {
						n := min(1+rng.IntN(9), len(idx)-at)
						runs = append(runs, SourceRun{Source: int32(len(runs) % 2), N: int32(n)})
						at += n
					}
					sameRows(t, TakeFixedRowRuns(mem, c.dt, [][]byte{rows, rows}, runs, idx), src, idx)
					// The general take uses the same gather for fixed-size lists and binaries.
					tc := &TaskContext{Alloc: mem, Cache: NewQueryCache()}
					taken, err := TakeArrayRows(context.Background(), tc, src, idx)
					if err != nil {
						t.Fatal(err)
					}
					sameRows(t, taken, src, idx)
				}
				src.Release()
			}
		})
	}
}

// sameRows checks that row i of got is row idx[i] of src, and releases got.
func sameRows(t *testing.T, got, src arrow.Array, idx []int32) {
	t.Helper()
	defer got.Release()
	if got.Len() != len(idx) || !arrow.TypeEqual(got.DataType(), src.DataType()) {
		t.Fatalf("got %d rows of %s, want %d of %s", got.Len(), got.DataType(), len(idx), src.DataType())
	}
	for i, j := range idx {
		if g, w := fmt.Sprint(got.GetOneForMarshal(i)), fmt.Sprint(src.GetOneForMarshal(int(j))); g != w {
			t.Fatalf("row %d (source row %d): got %v, want %v", i, j, g, w)
		}
	}
}
