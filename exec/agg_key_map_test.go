package exec

import (
	"context"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The map hands out the ids it is given for new keys and finds every key again after growing.
func TestFixedKeyMap(t *testing.T) {
	var m fixedKeyMap
	keyOf := func(i int) uint64 { return uint64(int64(i*7919) - 50_000) } // negatives and spread
	const n = 20_000
	for i := 0; i < n; i++ {
		id, found := m.lookupOrInsert(keyOf(i), uint32(i))
		if found || id != uint32(i) {
			t.Fatalf("insert %d: got id %d found %v", i, id, found)
		}
	}
	if m.count != n || 2*m.count > len(m.slots) {
		t.Fatalf("count %d in %d slots", m.count, len(m.slots))
	}
	for i := 0; i < n; i++ {
		if id, found := m.lookupOrInsert(keyOf(i), n+1); !found || id != uint32(i) {
			t.Fatalf("lookup %d: got id %d found %v", i, id, found)
		}
		if id, ok := m.get(keyOf(i)); ok && id != uint32(i) {
			t.Fatalf("get %d: got id %d", i, id)
		}
	}
}

// Single fixed-width keys group like the row-key encoding: NULLs together, -0 with +0, every
// NaN together; ids are dense in order of first appearance.
func TestGroupTableFixedKeys(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name string
		keys func(mem memory.Allocator) arrow.Array
		want []uint32
	}{
		{"int64", func(mem memory.Allocator) arrow.Array {
			b := array.NewInt64Builder(mem)
			defer b.Release()
			b.AppendValues([]int64{5, -5, 5, 0, 0, math.MinInt64, math.MaxInt64, 0}, []bool{true, true, true, false, true, true, true, false})
			return b.NewArray()
		}, []uint32{0, 1, 0, 2, 3, 4, 5, 2}},
		{"int64 in runs, NULLs between", func(mem memory.Allocator) arrow.Array {
			b := array.NewInt64Builder(mem)
			defer b.Release()
			b.AppendValues([]int64{5, 5, 0, 0, 5, 5, 9, 9, 0, 0}, []bool{true, true, false, true, true, true, true, true, false, false})
			return b.NewArray()
		}, []uint32{0, 0, 1, 2, 0, 0, 3, 3, 1, 1}},
		{"float64", func(mem memory.Allocator) arrow.Array {
			b := array.NewFloat64Builder(mem)
			defer b.Release()
			b.AppendValues([]float64{math.Copysign(0, -1), 0.0, nan, -nan, 1.5, 0, 1.5}, []bool{true, true, true, true, true, false, true})
			return b.NewArray()
		}, []uint32{0, 0, 1, 1, 2, 3, 2}},
		{"date32", func(mem memory.Allocator) arrow.Array {
			b := array.NewDate32Builder(mem)
			defer b.Release()
			b.AppendValues([]arrow.Date32{-1, 18000, -1, 0}, []bool{true, true, true, false})
			return b.NewArray()
		}, []uint32{0, 1, 0, 2}},
		{"timestamp", func(mem memory.Allocator) arrow.Array {
			b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond})
			defer b.Release()
			b.AppendValues([]arrow.Timestamp{10, 20, 10, -30}, nil)
			return b.NewArray()
		}, []uint32{0, 1, 0, 2}},
	}
	for _, c := range cases {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		keys := c.keys(mem)
		g := newAggGroupTable([]arrow.DataType{keys.DataType()})
		// Two halves as two batches: ids carry over between batches.
		half := keys.Len() / 2
		var got []uint32
		for _, part := range []arrow.Array{array.NewSlice(keys, 0, int64(half)), array.NewSlice(keys, int64(half), int64(keys.Len()))} {
			ids, err := g.assign(context.Background(), mem, []arrow.Array{part}, part.Len())
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ids...)
			part.Release()
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s: got ids %v, want %v", c.name, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("%s: got ids %v, want %v", c.name, got, c.want)
			}
		}
		cols, err := g.keyColumns(mem)
		if err != nil {
			t.Fatal(err)
		}
		if cols[0].Len() != g.len() {
			t.Errorf("%s: %d key values for %d groups", c.name, cols[0].Len(), g.len())
		}
		releaseArrays(cols)
		g.release()
		keys.Release()
		mem.AssertSize(t, 0)
	}
}

// Integer sums run in int64 until an addition would overflow; the result stays exact.
func TestDecimalSumOfLargeIntegers(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cases := []struct {
		vals []int64
		want string
	}{
		{[]int64{math.MaxInt64, math.MaxInt64, 5}, "18446744073709551619"},
		{[]int64{math.MinInt64, math.MinInt64, -1}, "-18446744073709551617"},
		{[]int64{math.MaxInt64, math.MinInt64, math.MaxInt64, 1}, "9223372036854775807"},
		{[]int64{1, 2, 3}, "6"},
	}
	for _, c := range cases {
		def, err := aggSumDef(i64)
		if err != nil {
			t.Fatal(err)
		}
		acc := def.newAcc()
		acc.grow(1)
		b := array.NewInt64Builder(mem)
		b.AppendValues(c.vals, nil)
		in := b.NewArray()
		b.Release()
		if err := acc.update(make([]uint32, len(c.vals)), []arrow.Array{in}); err != nil {
			t.Fatal(err)
		}
		in.Release()
		out, err := acc.finish(mem)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.(*array.Decimal128).Value(0).BigInt().String(); got != c.want {
			t.Errorf("sum %v: got %s, want %s", c.vals, got, c.want)
		}
		out.Release()
	}
}
