package exec

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// randomDecimals returns n decimals of type t with NULLs: small values, values ending in 5
// (rounding ties), the type's largest, and by mode: 1, values near the int64 limits and their
// quotients by powers of ten (a batch still within int64); 2, also values beyond int64.
func randomDecimals(mem memory.Allocator, rng *rand.Rand, t *arrow.Decimal128Type, n, mode int) arrow.Array {
	b := array.NewDecimal128Builder(mem, t)
	defer b.Release()
	maxP := decimal128.GetScaleMultiplier(int(t.Precision)).Sub(decimal128.FromI64(1))
	for range n {
		var v decimal128.Num
		switch r := rng.Intn(10); {
		case r == 0:
			b.AppendNull()
			continue
		case r == 1 && mode >= 1:
			k := rng.Intn(12)
			v = decimal128.FromI64(math.MaxInt64/int64(decimal128.GetScaleMultiplier(k).LowBits()) - rng.Int63n(3))
		case r == 2 && mode == 2:
			v = decimal128.New(1, rng.Uint64()) // beyond int64
		case r == 3:
			v = maxP
		case r == 4:
			v = decimal128.FromI64((rng.Int63n(100)*10 + 5) * int64(decimal128.GetScaleMultiplier(rng.Intn(8)).LowBits()))
		default:
			v = decimal128.FromI64(rng.Int63n(2_000_001) - 1_000_000)
		}
		if !v.FitsInPrecision(t.Precision) {
			v = maxP
		}
		if _, fits := decimalFitsInt64(v); !fits && mode < 2 {
			v = decimal128.FromI64(math.MaxInt64)
		}
		if rng.Intn(2) == 0 {
			v = v.Negate()
		}
		b.Append(v)
	}
	return b.NewArray()
}

// evalBoth evaluates e over batch with the int64 paths on and off and fails the test unless
// both give the same values, NULLs and error.
func evalBoth(t *testing.T, tc *TaskContext, e Expr, batch arrow.RecordBatch) {
	t.Helper()
	run := func(fast bool) (arrow.Array, error) {
		defer func(old bool) { int64DecimalPaths = old }(int64DecimalPaths)
		int64DecimalPaths = fast
		return e.Eval(context.Background(), tc, batch)
	}
	want, werr := run(false)
	got, gerr := run(true)
	if want != nil {
		defer want.Release()
	}
	if got != nil {
		defer got.Release()
	}
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("%s: error %v, general path's %v", e, gerr, werr)
	}
	if werr != nil {
		return
	}
	if !arrow.TypeEqual(got.DataType(), want.DataType()) || !array.Equal(got, want) {
		for i := 0; i < got.Len(); i++ {
			if got.IsNull(i) != want.IsNull(i) || got.ValueStr(i) != want.ValueStr(i) {
				t.Fatalf("%s row %d: got %s, general path %s", e, i, got.ValueStr(i), want.ValueStr(i))
			}
		}
		t.Fatalf("%s: got %s, general path %s", e, got, want)
	}
}

// TestInt64DecimalPathsMatchGeneralPaths checks that decimal +, -, * and casts to decimal give
// what the decimal128 row-by-row code gives, over random operands within int64, at its edges and
// beyond it, with NULLs and sliced arrays, for scales that add, keep and drop digits. Values
// beyond int64 anywhere in a batch send it down the general path, so mode 1 keeps batches
// within int64 and at its edges.
func TestInt64DecimalPathsMatchGeneralPaths(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tc := &TaskContext{Alloc: mem}
	types := []*arrow.Decimal128Type{
		{Precision: 15, Scale: 2}, {Precision: 12, Scale: 0}, {Precision: 38, Scale: 10},
		{Precision: 4, Scale: 4}, {Precision: 20, Scale: 6}, {Precision: 38, Scale: 20},
		{Precision: 38, Scale: 0},
	}
	seed := int64(0)
	for mode := range 3 {
		for _, ta := range types {
			for _, tb := range types {
				seed++
				rng := rand.New(rand.NewSource(seed))
				n := 300
				a := randomDecimals(mem, rng, ta, n+1, mode)
				b := randomDecimals(mem, rng, tb, n+1, mode)
				ib := array.NewInt64Builder(mem)
				for range n + 1 {
					if rng.Intn(15) == 0 {
						ib.AppendNull()
					} else {
						ib.Append([]int64{1, -1, 0, math.MaxInt64, math.MinInt64, rng.Int63n(1e12) - 5e11}[rng.Intn(6)])
					}
				}
				ints := ib.NewArray()
				ib.Release()
				schema := schemaOf("a", ta, "b", tb, "i", opInt64)
				full := array.NewRecordBatch(schema, []arrow.Array{a, b, ints}, int64(n+1))
				a.Release()
				b.Release()
				ints.Release()
				for _, batch := range []arrow.RecordBatch{full, full.NewSlice(1, int64(n+1))} {
					ca, cb, ci := NewColumn(0, "a", ta), NewColumn(1, "b", tb), NewColumn(2, "i", opInt64)
					for _, op := range []string{"+", "-", "*"} {
						for _, args := range [][]Expr{{ca, cb}, {ci, cb}, {ca, lit(int64(1))}} {
							e, err := NewCall(op, args)
							if err != nil {
								t.Fatal(err)
							}
							t.Run(fmt.Sprintf("mode=%d/%s", mode, e), func(t *testing.T) { evalBoth(t, tc, e, batch) })
						}
					}
					for _, to := range types {
						for _, from := range []Expr{ca, ci} {
							e, err := NewCast(from, to)
							if err != nil {
								t.Fatal(err)
							}
							t.Run(fmt.Sprintf("mode=%d/%s", mode, e), func(t *testing.T) { evalBoth(t, tc, e, batch) })
						}
					}
					if batch != full {
						batch.Release()
					}
				}
				full.Release()
			}
		}
	}
}

// The bounds that let a kernel skip its per-row overflow checks hold exactly at the int64 edge:
// 3037000499² fits and 3037000500² does not, |math.MinInt64| is 2^63.
func TestInt64DecimalBounds(t *testing.T) {
	for _, c := range []struct {
		a, b uint64
		want bool
	}{
		{3037000499, 3037000499, true}, {3037000500, 3037000500, false}, {math.MaxInt64, 1, true},
		{1 << 63, 1, false}, {0, 1 << 63, true}, {1 << 32, 1 << 32, false},
	} {
		if got := productFits(c.a, c.b); got != c.want {
			t.Errorf("productFits(%d, %d) = %v", c.a, c.b, got)
		}
	}
	half := uint64(math.MaxInt64 / 2)
	for _, c := range []struct {
		bx, mx, by, my uint64
		want           bool
	}{
		{half, 1, half + 1, 1, true}, {half + 1, 1, half + 1, 1, false}, {math.MaxInt64 / 100, 100, 7, 1, true},
		{math.MaxInt64/100 + 1, 100, 0, 1, false}, {1 << 63, 1, 1 << 63, 1, false}, {0, 1e18, 9, 1e18, true},
	} {
		if got := scaledSumFits(c.bx, c.mx, c.by, c.my); got != c.want {
			t.Errorf("scaledSumFits(%d, %d, %d, %d) = %v", c.bx, c.mx, c.by, c.my, got)
		}
	}
	if magnitude(math.MinInt64) != 1<<63 || magnitude(-5) != 5 || magnitude(7) != 7 {
		t.Error("magnitude")
	}
}

// Batches whose operands lie just inside and just outside the bounds that prove a batch free of
// overflow give what the decimal128 row-by-row code gives: the unchecked loops at the edge, the
// checked ones (and their fallback) past it, with negative values, NULLs and scale changes.
func TestInt64DecimalPathsAtTheBounds(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tc := &TaskContext{Alloc: mem}
	ta, tb := &arrow.Decimal128Type{Precision: 38, Scale: 0}, &arrow.Decimal128Type{Precision: 38, Scale: 2}
	half := int64(math.MaxInt64 / 2)
	edges := [][]int64{
		{3037000499, -3037000499, 1, 0},          // products fit exactly
		{3037000500, -3037000499, 2, 0},          // a product may not: checked loop
		{half, -half, half + 1, -(half + 1)},     // sums reach ±MaxInt64
		{half + 2, -(half + 2), 3, 0},            // sums may leave int64
		{math.MaxInt64 / 100, -7, 5, 1},          // scaled by 100 for the other scale
		{math.MaxInt64/100 + 1, 1, -1, 0},        // past it once scaled
		{math.MinInt64, 1, 0, -1},                // |MinInt64| bounds nothing
		{math.MaxInt64, math.MinInt64 + 1, 0, 0}, // the int64 extremes
	}
	build := func(t *arrow.Decimal128Type, vals []int64, nullAt int) arrow.Array {
		b := array.NewDecimal128Builder(mem, t)
		defer b.Release()
		for i, v := range vals {
			if i == nullAt {
				b.AppendNull()
				continue
			}
			b.Append(decimal128.FromI64(v))
		}
		return b.NewArray()
	}
	for i, xs := range edges {
		for j, ys := range edges {
			a := build(ta, xs, -1)
			b := build(tb, ys, (i+j)%5)
			batch := array.NewRecordBatch(schemaOf("a", ta, "b", tb), []arrow.Array{a, b}, int64(len(xs)))
			a.Release()
			b.Release()
			ca, cb := NewColumn(0, "a", ta), NewColumn(1, "b", tb)
			for _, op := range []string{"+", "-", "*"} {
				for _, args := range [][]Expr{{ca, cb}, {cb, ca}, {ca, ca}, {ca, lit(int64(3037000499))}, {lit(int64(-half)), ca}, {cb, lit(int64(1))}} {
					e, err := NewCall(op, args)
					if err != nil {
						t.Fatal(err)
					}
					t.Run(fmt.Sprintf("%d-%d/%s", i, j, e), func(t *testing.T) { evalBoth(t, tc, e, batch) })
				}
			}
			batch.Release()
		}
	}
}
