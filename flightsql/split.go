package flightsql

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ipcOverheadBytes is what an IPC message costs beyond its buffers (flatbuffer metadata,
// Flight framing), kept free under the cap.
const ipcOverheadBytes = 64 << 10

// splitBatch returns rec as batches of at most maxBytes each (as the IPC writer will encode
// them), slicing by rows. A single row larger than the cap is returned alone: rows are never
// split. The returned batches are owned by the caller (each must be released); rec itself is
// not released.
func splitBatch(rec arrow.RecordBatch, maxBytes int64) []arrow.RecordBatch {
	limit := maxBytes - ipcOverheadBytes
	if limit < 1 {
		limit = 1
	}
	size := recordBytes(rec)
	rows := rec.NumRows()
	if size <= limit || rows <= 1 {
		rec.Retain()
		return []arrow.RecordBatch{rec}
	}
	// Cut into roughly equal pieces first; values of uneven width are caught by checking each
	// piece again.
	pieces := (size + limit - 1) / limit
	step := max(rows/pieces, 1)
	var out []arrow.RecordBatch
	for start := int64(0); start < rows; start += step {
		end := min(start+step, rows)
		piece := rec.NewSlice(start, end)
		if end-start > 1 && recordBytes(piece) > limit {
			mid := start + (end-start)/2
			left, right := rec.NewSlice(start, mid), rec.NewSlice(mid, end)
			out = append(out, splitBatch(left, maxBytes)...)
			out = append(out, splitBatch(right, maxBytes)...)
			left.Release()
			right.Release()
			piece.Release()
			continue
		}
		out = append(out, piece)
	}
	return out
}

// recordBytes estimates the IPC body size of rec: the bytes of its rows only (a slice does
// not pay for its parent's buffers), each buffer padded to 8 bytes.
func recordBytes(rec arrow.RecordBatch) int64 {
	var total int64
	for _, col := range rec.Columns() {
		total += dataBytes(col.Data())
	}
	return total
}

// dataBytes estimates the encoded size of the rows [offset, offset+len) of d.
func dataBytes(d arrow.ArrayData) int64 {
	n := int64(d.Len())
	off := int64(d.Offset())
	bufs := d.Buffers()
	var total int64
	if len(bufs) > 0 && bufs[0] != nil {
		total += pad8((n + 7) / 8)
	}
	switch dt := d.DataType().(type) {
	case *arrow.NullType:
		// A null column has no buffers at all: it costs nothing in the body.
	case *arrow.StringType, *arrow.BinaryType:
		total += pad8(4*(n+1)) + pad8(offsetSpan32(bufs, off, n))
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		total += pad8(8*(n+1)) + pad8(offsetSpan64(bufs, off, n))
	case *arrow.ListType, *arrow.MapType:
		total += pad8(4 * (n + 1))
		if start, end, ok := offsetRange32(bufs, off, n); ok && len(d.Children()) == 1 {
			child := array.NewSliceData(d.Children()[0], start, end)
			total += dataBytes(child)
			child.Release()
		}
	case *arrow.FixedSizeListType:
		size := int64(dt.Len())
		if len(d.Children()) == 1 {
			child := array.NewSliceData(d.Children()[0], off*size, (off+n)*size)
			total += dataBytes(child)
			child.Release()
		}
	case *arrow.StructType:
		for _, c := range d.Children() {
			child := array.NewSliceData(c, off, off+n)
			total += dataBytes(child)
			child.Release()
		}
	case arrow.FixedWidthDataType:
		total += pad8((n*int64(dt.BitWidth()) + 7) / 8)
	default:
		// Unknown layout: count every buffer and child whole, an upper bound.
		for _, b := range bufs[min(1, len(bufs)):] {
			if b != nil {
				total += pad8(int64(b.Len()))
			}
		}
		for _, c := range d.Children() {
			total += dataBytes(c)
		}
		if _, ok := dt.(*arrow.DictionaryType); ok && d.Dictionary() != nil {
			total += dataBytes(d.Dictionary())
		}
	}
	return total
}

func pad8(n int64) int64 { return (n + 7) &^ 7 }

// offsetRange32 reads the first and last value offsets of rows [off, off+n).
func offsetRange32(bufs []*memory.Buffer, off, n int64) (int64, int64, bool) {
	if len(bufs) < 2 || bufs[1] == nil {
		return 0, 0, false
	}
	offsets := arrow.Int32Traits.CastFromBytes(bufs[1].Bytes())
	if int64(len(offsets)) < off+n+1 {
		return 0, 0, false
	}
	return int64(offsets[off]), int64(offsets[off+n]), true
}

func offsetSpan32(bufs []*memory.Buffer, off, n int64) int64 {
	start, end, ok := offsetRange32(bufs, off, n)
	if !ok {
		return 0
	}
	return end - start
}

func offsetSpan64(bufs []*memory.Buffer, off, n int64) int64 {
	if len(bufs) < 2 || bufs[1] == nil {
		return 0
	}
	offsets := arrow.Int64Traits.CastFromBytes(bufs[1].Bytes())
	if int64(len(offsets)) < off+n+1 {
		return 0
	}
	return offsets[off+n] - offsets[off]
}
