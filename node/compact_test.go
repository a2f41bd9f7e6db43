package node

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestCompactBatchesDropsSlack: a batch whose buffers reserve far more than they hold (as
// Parquet decoding leaves some) is copied into buffers of its exact size, with the same values;
// a compact batch is kept as it is.
func TestCompactBatchesDropsSlack(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const rows = 5000
	values := memory.NewResizableBuffer(mem)
	values.Reserve(1 << 20)
	values.ResizeNoShrink(rows * 8)
	ints := arrow.Int64Traits.CastFromBytes(values.Bytes())
	for i := range ints {
		ints[i] = int64(i * 3)
	}
	data := array.NewData(arrow.PrimitiveTypes.Int64, rows, []*memory.Buffer{nil, values}, nil, 0, 0)
	values.Release()
	col := array.MakeFromData(data)
	data.Release()
	sb := array.NewStringBuilder(mem)
	for i := range rows {
		sb.Append("v" + string(rune('a'+i%26)))
	}
	strs := sb.NewArray()
	sb.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	slack := array.NewRecordBatch(schema, []arrow.Array{col, strs}, rows)
	col.Release()
	strs.Release()
	want := slack.Column(0).String() + slack.Column(1).String()
	if !hasSlack(slack) {
		t.Fatal("the batch reserves no more than it holds; the test needs slack")
	}
	compact, err := compactBatches([]arrow.RecordBatch{slack}, mem)
	if err != nil {
		t.Fatal(err)
	}
	got := compact[0]
	defer got.Release()
	if hasSlack(got) {
		t.Error("the compacted batch still reserves more than it holds")
	}
	if s := got.Column(0).String() + got.Column(1).String(); s != want {
		t.Errorf("compacting changed the values")
	}
	if n := mem.CurrentAlloc(); n > 2*rows*8+64*1024 {
		t.Errorf("%d bytes allocated after compacting, want about %d", n, rows*8+rows*6)
	}
	kept, err := compactBatches([]arrow.RecordBatch{got}, mem)
	if err != nil {
		t.Fatal(err)
	}
	if kept[0] != got {
		t.Error("a compact batch was copied again")
	}
}
