package node

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// compactBatches returns batches with every batch whose buffers reserve much more memory than
// they hold copied into buffers of its exact size. Array builders double their capacity as
// they grow, so a column decoded from Parquet may reserve up to twice its bytes; a partition is
// held for long and counted by the bytes it holds (memcat.PartData.Bytes), so it must not keep
// that slack. Compact batches are kept as they are. It takes over batches (releasing those it
// replaces); on an error every batch is released.
func compactBatches(batches []arrow.RecordBatch, mem memory.Allocator) ([]arrow.RecordBatch, error) {
	for i, b := range batches {
		if !hasSlack(b) {
			continue
		}
		c, err := compactBatch(b, mem)
		if err != nil {
			for _, b := range batches {
				b.Release()
			}
			return nil, err
		}
		b.Release()
		batches[i] = c
	}
	return batches, nil
}

// hasSlack reports whether b's buffers reserve more than an eighth (and 4 KiB) beyond what
// they hold.
func hasSlack(b arrow.RecordBatch) bool {
	seen := map[*memory.Buffer]bool{}
	var held, reserved int64
	var visit func(d arrow.ArrayData)
	visit = func(d arrow.ArrayData) {
		for _, buf := range d.Buffers() {
			if buf == nil || seen[buf] {
				continue
			}
			seen[buf] = true
			held += int64(buf.Len())
			reserved += int64(buf.Cap())
		}
		for _, c := range d.Children() {
			visit(c)
		}
		// Dictionary is a nil *array.Data, not a nil interface, without a dictionary.
		if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
			visit(dict)
		}
	}
	for _, c := range b.Columns() {
		visit(c.Data())
	}
	return reserved > held+held/8+4096
}

// compactBatch copies every column of b into buffers of exactly the size it needs.
func compactBatch(b arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, b.NumCols())
	for i, c := range b.Columns() {
		copied, err := array.Concatenate([]arrow.Array{c}, mem)
		if err != nil {
			for _, done := range cols[:i] {
				done.Release()
			}
			return nil, err
		}
		cols[i] = copied
	}
	out := array.NewRecordBatch(b.Schema(), cols, b.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}
