package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The byte-wise AND / OR agree with Kleene logic row by row, over every pair of TRUE, FALSE and
// NULL, for aligned and sliced (row path) input.
func TestBitmapLogicKleene(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tc := &TaskContext{Alloc: mem}
	// All nine pairs, repeated so that the arrays span several bytes.
	var ljs, rjs string
	vals := []string{"true", "false", "null"}
	for rep := 0; rep < 3; rep++ {
		for _, l := range vals {
			for _, r := range vals {
				if ljs != "" {
					ljs += ","
					rjs += ","
				}
				ljs += l
				rjs += r
			}
		}
	}
	left := arr(t, mem, bln, "["+ljs+"]")
	right := arr(t, mem, bln, "["+rjs+"]")
	defer left.Release()
	defer right.Release()
	allTrue := arr(t, mem, bln, "[true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true]")
	defer allTrue.Release()
	for _, name := range []string{"and", "or"} {
		k, _, err := ResolveScalar(name, []arrow.DataType{bln, bln})
		if err != nil {
			t.Fatal(err)
		}
		for _, pair := range [][2]arrow.Array{{left, right}, {left, allTrue}, {allTrue, right}} {
			for _, off := range []int64{0, 8, 3} {
				l := array.NewSlice(pair[0], off, int64(pair[0].Len()))
				r := array.NewSlice(pair[1], off, int64(pair[1].Len()))
				out, err := k(context.Background(), tc, []arrow.Array{l, r}, l.Len())
				if err != nil {
					t.Fatal(err)
				}
				lb, rb := l.(*array.Boolean), r.(*array.Boolean)
				for i := 0; i < l.Len(); i++ {
					wv, wok := kleene(name, lb.Value(i), lb.IsValid(i), rb.Value(i), rb.IsValid(i))
					got := out.(*array.Boolean)
					if got.IsValid(i) != wok || (wok && got.Value(i) != wv) {
						t.Fatalf("%s offset %d row %d: got %v valid %v, want %v valid %v", name, off, i, got.Value(i), got.IsValid(i), wv, wok)
					}
				}
				out.Release()
				l.Release()
				r.Release()
			}
		}
	}
}
