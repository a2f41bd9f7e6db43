package exec

import (
	"context"
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Row selection by position: the filter and the hash repartition pick rows of a batch by an
// index list. Common layouts (fixed-width values, booleans, UTF-8 strings) are gathered with
// typed loops straight into new buffers; every other type goes through compute.Take.

// selectedRows appends to sel[:0] the positions i < n whose bit offset+i of bitmap is set, in
// increasing order.
func selectedRows(bitmap []byte, offset, n int, sel []int32) []int32 {
	sel = sel[:0]
	i := 0
	// Lead-in up to a byte boundary of the bitmap.
	for ; i < n && (offset+i)%8 != 0; i++ {
		if bitutil.BitIsSet(bitmap, offset+i) {
			sel = append(sel, int32(i))
		}
	}
	base := (offset + i) / 8
	for ; i+64 <= n; i += 64 {
		w := binary.LittleEndian.Uint64(bitmap[base:])
		base += 8
		for w != 0 {
			sel = append(sel, int32(i+bits.TrailingZeros64(w)))
			w &= w - 1
		}
	}
	for ; i < n; i++ {
		if bitutil.BitIsSet(bitmap, offset+i) {
			sel = append(sel, int32(i))
		}
	}
	return sel
}

// takeBatchRows returns a batch with the rows idx of batch (same schema), in idx's order; a
// batch without columns keeps only its row count. Every index must be in range.
func takeBatchRows(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch, idx []int32) (arrow.RecordBatch, error) {
	cols, err := takeColumns(ctx, tc, batch.Columns(), idx)
	if err != nil {
		return nil, err
	}
	defer releaseArrays(cols)
	return array.NewRecordBatch(batch.Schema(), cols, int64(len(idx))), nil
}

// takeTyped returns the rows idx of a with a typed loop, or nil when a's layout has none (then
// the caller uses compute.Take). The result has a's type, and NULLs where a has them.
func takeTyped(mem memory.Allocator, a arrow.Array, idx []int32) arrow.Array {
	dt := a.DataType()
	data := a.Data()
	switch dt.ID() {
	case arrow.INT64, arrow.UINT64, arrow.FLOAT64, arrow.TIMESTAMP, arrow.DATE64, arrow.DURATION:
		return takeFixed[uint64](mem, data, idx)
	case arrow.INT32, arrow.UINT32, arrow.FLOAT32, arrow.DATE32, arrow.TIME32:
		return takeFixed[uint32](mem, data, idx)
	case arrow.INT16, arrow.UINT16:
		return takeFixed[uint16](mem, data, idx)
	case arrow.INT8, arrow.UINT8:
		return takeFixed[uint8](mem, data, idx)
	case arrow.DECIMAL128:
		return takeFixed[[2]uint64](mem, data, idx)
	case arrow.BOOL:
		return takeBools(mem, data, idx)
	case arrow.STRING:
		return takeStrings(mem, a.(*array.String), idx)
	case arrow.FIXED_SIZE_LIST, arrow.FIXED_SIZE_BINARY:
		if rows, ok := FixedRowBytes(a); ok {
			return TakeFixedRows(mem, dt, rows, idx)
		}
	}
	return nil
}

// takeFixed gathers a fixed-width array whose elements are sizeof(T) bytes.
func takeFixed[T any](mem memory.Allocator, data arrow.ArrayData, idx []int32) arrow.Array {
	var zero T
	width := int(unsafe.Sizeof(zero))
	n := len(idx)
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(n * width)
	src := data.Buffers()[1]
	if n > 0 && src != nil && src.Len() > 0 {
		from := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(src.Bytes()))), src.Len()/width)[data.Offset():]
		to := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(values.Bytes()))), n)
		for i, j := range idx {
			to[i] = from[j]
		}
	}
	validity, nulls := takeValidity(mem, data, idx)
	if validity != nil {
		defer validity.Release()
	}
	out := array.NewData(data.DataType(), n, []*memory.Buffer{validity, values}, nil, nulls, 0)
	defer out.Release()
	return array.MakeFromData(out)
}

// takeBools gathers a boolean array bit by bit.
func takeBools(mem memory.Allocator, data arrow.ArrayData, idx []int32) arrow.Array {
	n := len(idx)
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(int(bitutil.BytesForBits(int64(n))))
	to := values.Bytes()
	clear(to)
	if src := data.Buffers()[1]; src != nil {
		from, off := src.Bytes(), data.Offset()
		for i, j := range idx {
			if bitutil.BitIsSet(from, off+int(j)) {
				bitutil.SetBit(to, i)
			}
		}
	}
	validity, nulls := takeValidity(mem, data, idx)
	if validity != nil {
		defer validity.Release()
	}
	out := array.NewData(data.DataType(), n, []*memory.Buffer{validity, values}, nil, nulls, 0)
	defer out.Release()
	return array.MakeFromData(out)
}

// takeStrings gathers a UTF-8 array: offsets first, then the bytes of every picked value.
func takeStrings(mem memory.Allocator, a *array.String, idx []int32) arrow.Array {
	n := len(idx)
	offsets := memory.NewResizableBuffer(mem)
	defer offsets.Release()
	offsets.Resize((n + 1) * 4)
	offs := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(offsets.Bytes()))), n+1)
	srcOffs := a.ValueOffsets()
	total := 0
	offs[0] = 0
	for i, j := range idx {
		total += int(srcOffs[j+1] - srcOffs[j])
		offs[i+1] = int32(total)
	}
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(total)
	to := values.Bytes()
	from := a.ValueBytes()
	base := int(srcOffs[0])
	for i, j := range idx {
		copy(to[offs[i]:offs[i+1]], from[int(srcOffs[j])-base:int(srcOffs[j+1])-base])
	}
	data := a.Data()
	validity, nulls := takeValidity(mem, data, idx)
	if validity != nil {
		defer validity.Release()
	}
	out := array.NewData(data.DataType(), n, []*memory.Buffer{validity, offsets, values}, nil, nulls, 0)
	defer out.Release()
	return array.MakeFromData(out)
}

// takeValidity gathers the validity bits of data at idx; it returns nil and 0 when no picked
// row is NULL. The caller releases the buffer.
func takeValidity(mem memory.Allocator, data arrow.ArrayData, idx []int32) (*memory.Buffer, int) {
	if data.NullN() == 0 || data.Buffers()[0] == nil {
		return nil, 0
	}
	from, off := data.Buffers()[0].Bytes(), data.Offset()
	validity := memory.NewResizableBuffer(mem)
	validity.Resize(int(bitutil.BytesForBits(int64(len(idx)))))
	to := validity.Bytes()
	clear(to)
	nulls := 0
	for i, j := range idx {
		if bitutil.BitIsSet(from, off+int(j)) {
			bitutil.SetBit(to, i)
		} else {
			nulls++
		}
	}
	if nulls == 0 {
		validity.Release()
		return nil, 0
	}
	return validity, nulls
}

// TakeArrayRows returns the rows idx of a, in idx's order (same type): a typed gather where the
// layout has one, else compute.Take. Every index must be in range.
func TakeArrayRows(ctx context.Context, tc *TaskContext, a arrow.Array, idx []int32) (arrow.Array, error) {
	if t := takeTyped(tc.Alloc, a, idx); t != nil {
		return t, nil
	}
	return takeRows(ctx, tc, a, idx)
}

// TakeRows returns a batch with the rows idx of batch, in idx's order (same schema). Every index
// must be in range.
func TakeRows(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch, idx []int32) (arrow.RecordBatch, error) {
	return takeBatchRows(ctx, tc, batch, idx)
}
