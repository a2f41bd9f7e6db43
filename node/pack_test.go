package node

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// packSchema has a column of every layout a partition holds: fixed-width values with NULLs,
// strings, lists, structs and dictionaries.
var packSchema = arrow.NewSchema([]arrow.Field{
	{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Float64}), Nullable: true},
	{Name: "d", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}, Nullable: true},
}, nil)

// packBatch builds rows rows from row from with a builder (whose buffers reserve more than
// they hold).
func packBatch(t *testing.T, mem memory.Allocator, from, rows int) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, packSchema)
	defer b.Release()
	for i := from; i < from+rows; i++ {
		if i%11 == 5 {
			for f := range b.Fields() {
				b.Field(f).AppendNull()
			}
			continue
		}
		b.Field(0).(*array.Int64Builder).Append(int64(i) * 3)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("v%d", i%97))
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		for k := range i % 4 {
			lb.ValueBuilder().(*array.Int32Builder).Append(int32(i + k))
		}
		sb := b.Field(3).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Float64Builder).Append(float64(i) / 4)
		if err := b.Field(4).(*array.BinaryDictionaryBuilder).AppendString(fmt.Sprintf("k%d", i%7)); err != nil {
			t.Fatal(err)
		}
	}
	return b.NewRecordBatch()
}

// reservedBytes is what the buffers of batches reserve (their capacities), each counted once.
func reservedBytes(batches []arrow.RecordBatch) (reserved int64) {
	seen := map[*memory.Buffer]bool{}
	for _, b := range batches {
		for _, c := range b.Columns() {
			eachBuffer(c.Data(), func(buf *memory.Buffer) {
				if !seen[buf] {
					seen[buf] = true
					reserved += int64(buf.Len())
				}
			})
		}
	}
	return reserved
}

// TestPackPartitionKeepsRowsAndDropsSlack: packed batches hold the same rows (slices at an
// offset and shared dictionaries included) in slabs about the size of what they hold, and
// every slab is freed with the last batch holding it.
func TestPackPartitionKeepsRowsAndDropsSlack(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	whole := packBatch(t, mem, 0, 30_000)
	var batches []arrow.RecordBatch
	for _, rg := range [][2]int64{{0, 10_000}, {10_000, 10_001}, {10_001, 29_999}} {
		batches = append(batches, whole.NewSlice(rg[0], rg[1]))
	}
	whole.Release()
	batches = append(batches, packBatch(t, mem, 30_000, 5000), packBatch(t, mem, 35_000, 0))
	var want []string
	for _, b := range batches {
		want = append(want, fmt.Sprint(b))
	}
	before := mem.CurrentAlloc()
	packed := packPartition(batches, mem)
	if len(packed) != len(want) {
		t.Fatalf("%d batches packed, want %d", len(packed), len(want))
	}
	for i, b := range packed {
		if got := fmt.Sprint(b); got != want[i] {
			t.Fatalf("batch %d changed when packed", i)
		}
	}
	// The three slices share the builder's buffers: copied once, still shared.
	if packed[0].Column(0).Data().Buffers()[1] != packed[2].Column(0).Data().Buffers()[1] {
		t.Error("slices of one batch no longer share its buffers")
	}
	held := reservedBytes(packed)
	if after := int64(mem.CurrentAlloc()); after > held+held/16+64*1024 || after >= int64(before) {
		t.Errorf("%d bytes allocated after packing %d bytes of buffers (%d before)", after, held, before)
	}
	for _, b := range packed[:len(packed)-1] {
		b.Release()
	}
	if mem.CurrentAlloc() == 0 {
		t.Fatal("the slab was freed while a batch carved out of it is held")
	}
	packed[len(packed)-1].Release()
}

// TestPackPartitionSlabs: a partition larger than a slab is packed into several, a batch
// larger than a slab into one of its own.
func TestPackPartitionSlabs(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	batch := func(rows int) arrow.RecordBatch {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for i := range rows {
			b.Append(int64(i))
		}
		col := b.NewArray()
		defer col.Release()
		return array.NewRecordBatch(schema, []arrow.Array{col}, int64(rows))
	}
	big := packSlabBytes/8 + 1000 // rows of a batch larger than a slab
	batches := []arrow.RecordBatch{batch(packSlabBytes / 8 / 3), batch(packSlabBytes / 8 / 3), batch(packSlabBytes / 8 / 2), batch(big)}
	packed := packPartition(batches, mem)
	slabs := map[*memory.Buffer]bool{}
	for _, b := range packed {
		slabs[b.Column(0).Data().Buffers()[1].Parent()] = true
	}
	if len(slabs) != 3 {
		t.Errorf("packed into %d slabs, want 3 (two thirds, a half, and the large batch alone)", len(slabs))
	}
	if got := packed[3].Column(0).(*array.Int64).Value(big - 1); got != int64(big-1) {
		t.Errorf("the large batch's last value is %d, want %d", got, big-1)
	}
	for _, b := range packed {
		b.Release()
	}
}
