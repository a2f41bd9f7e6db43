package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestSelectedRows(t *testing.T) {
	// 150 bits: every third bit set, plus bit 149.
	bitmap := make([]byte, 19)
	for i := 0; i < 150; i++ {
		if i%3 == 0 || i == 149 {
			bitmap[i/8] |= 1 << (i % 8)
		}
	}
	for _, offset := range []int{0, 1, 5, 8, 13, 64} {
		for _, n := range []int{0, 1, 7, 64, 65, 130, 150 - offset} {
			if offset+n > 150 {
				continue
			}
			var want []int32
			for i := 0; i < n; i++ {
				j := offset + i
				if j%3 == 0 || j == 149 {
					want = append(want, int32(i))
				}
			}
			got := selectedRows(bitmap, offset, n, nil)
			if len(got) != len(want) {
				t.Fatalf("offset %d n %d: got %v, want %v", offset, n, got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("offset %d n %d: got %v, want %v", offset, n, got, want)
				}
			}
		}
	}
}

// The typed gathers give what compute.Take gives, for every layout they handle, with NULLs and
// sliced input.
func TestTakeTypedMatchesTake(t *testing.T) {
	cases := []struct {
		dt arrow.DataType
		js string
	}{
		{i64, `[1, null, 3, 4, 5, null, 7, 8, 9, 10]`},
		{f64, `[1.5, 2.5, null, 4, 5, 6, 7, 8, 9, 10]`},
		{arrow.PrimitiveTypes.Int32, `[1, 2, 3, null, 5, 6, 7, 8, 9, 10]`},
		{arrow.PrimitiveTypes.Int16, `[1, 2, 3, null, 5, 6, 7, 8, 9, 10]`},
		{arrow.PrimitiveTypes.Uint8, `[1, 2, 3, null, 5, 6, 7, 8, 9, 10]`},
		{dec(12, 2), `["1.50", null, "-3.25", "4.00", "5", "6", "7", "8", "9", "10"]`},
		{bln, `[true, false, null, true, true, false, false, true, null, true]`},
		{str, `["a", "", null, "ccc", "dddd", "e", "ff", null, "ggg", "h"]`},
		{arrow.FixedWidthTypes.Date32, `["2020-01-01", null, "2020-01-03", "2020-01-04", "2020-01-05", "2020-01-06", "2020-01-07", "2020-01-08", "2020-01-09", "2020-01-10"]`},
		{i64, `[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]`},
		{str, `["a", "bb", "ccc", "dddd", "e", "ff", "g", "hh", "i", "jj"]`},
	}
	idx := []int32{6, 0, 2, 2, 5, 3}
	for _, c := range cases {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		full := arr(t, mem, c.dt, c.js)
		sliced := array.NewSlice(full, 2, 9)
		tc := &TaskContext{Alloc: mem}
		for _, a := range []arrow.Array{full, sliced} {
			got := takeTyped(mem, a, idx)
			if got == nil {
				t.Fatalf("%s: no typed gather", c.dt)
			}
			want, err := takeRows(context.Background(), tc, a, idx)
			if err != nil {
				t.Fatal(err)
			}
			if !array.Equal(got, want) || got.NullN() != want.NullN() {
				t.Errorf("%s offset %d: got %s, want %s", c.dt, a.Data().Offset(), got, want)
			}
			got.Release()
			want.Release()
		}
		sliced.Release()
		full.Release()
		mem.AssertSize(t, 0)
	}
}

// filterByMask keeps TRUE rows only (NULL drops the row), for every column type, and falls
// back to compute.Take for types without a typed gather.
func TestFilterByMask(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tc := &TaskContext{Alloc: mem}
	listType := arrow.ListOf(arrow.PrimitiveTypes.Int64)
	schema := schemaOf("x", i64, "s", str, "l", listType)
	x := arr(t, mem, i64, `[1, 2, 3, 4, null]`)
	s := arr(t, mem, str, `["a", "b", null, "d", "e"]`)
	l := arr(t, mem, listType, `[[1], [2, 2], null, [], [5]]`)
	batch := array.NewRecordBatch(schema, []arrow.Array{x, s, l}, 5)
	x.Release()
	s.Release()
	l.Release()
	defer batch.Release()
	cases := []struct {
		mask string
		want []string
	}{
		{`[true, false, null, true, true]`, []string{`[1 4 (null)]`, `["a" "d" "e"]`, `[[1] [] [5]]`}},
		{`[false, false, null, false, false]`, nil},
		{`[true, true, true, true, true]`, []string{`[1 2 3 4 (null)]`, `["a" "b" (null) "d" "e"]`, `[[1] [2 2] (null) [] [5]]`}},
	}
	for _, c := range cases {
		mask := arr(t, mem, bln, c.mask).(*array.Boolean)
		out, err := filterByMask(context.Background(), tc, batch, mask)
		mask.Release()
		if err != nil {
			t.Fatal(err)
		}
		if c.want == nil {
			if out != nil {
				t.Errorf("mask %s: got %d rows, want none", c.mask, out.NumRows())
				out.Release()
			}
			continue
		}
		for i, w := range c.want {
			if got := out.Column(i).String(); got != w {
				t.Errorf("mask %s column %d: got %s, want %s", c.mask, i, got, w)
			}
		}
		out.Release()
	}
}
