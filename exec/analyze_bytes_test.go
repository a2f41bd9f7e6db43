package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// EXPLAIN ANALYZE's bytes count a batch's own rows: a slice of a large column counts its rows'
// values (and offsets and validity), not the whole column it shares buffers with.
func TestBatchBytesCountsTheRowsOfSlices(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ints := array.NewInt64Builder(mem)
	strs := array.NewStringBuilder(mem)
	for i := range 1000 {
		ints.Append(int64(i))
		if i%10 == 0 {
			strs.AppendNull()
		} else {
			strs.Append("abc")
		}
	}
	ic, sc := ints.NewArray(), strs.NewArray()
	ints.Release()
	strs.Release()
	defer ic.Release()
	defer sc.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	for _, c := range []struct {
		from, to int64
		want     int64
	}{
		// 8 bytes an int; per string row 4 bytes of offset (plus one) and its bytes; a validity
		// bit a row in each column (the builder gives the ints a bitmap too).
		{0, 1000, 8*1000 + 4*1001 + 3*900 + 2*125},
		{100, 110, 8*10 + 4*11 + 3*9 + 2*2},
		{995, 1000, 8*5 + 4*6 + 3*5 + 2*1},
	} {
		is, ss := array.NewSlice(ic, c.from, c.to), array.NewSlice(sc, c.from, c.to)
		b := array.NewRecordBatch(schema, []arrow.Array{is, ss}, c.to-c.from)
		if got := batchBytes(b); got != c.want {
			t.Errorf("rows [%d, %d): %d bytes, want %d", c.from, c.to, got, c.want)
		}
		b.Release()
		is.Release()
		ss.Release()
	}
}
