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

// Row selection by runs: a filter that keeps most rows (a date range over most of a table)
// keeps them in long runs of consecutive rows. Copying each run of a column with one memmove
// is several times faster than gathering its rows one by one through an index list, so a
// dense selection is cut into runs and the common layouts (fixed-width values, booleans, UTF-8
// strings) are copied run by run; other columns are gathered by index as before. The result
// is the same batch either way.

// minRunRows is the mean run length (kept rows per run) from which filterRuns is used.
const minRunRows = 16

// selectedRuns returns the runs of consecutive set bits among bits offset .. offset+n-1 of
// bitmap as [start, end) row pairs (flattened), or nil when there are more than maxRuns runs
// or offset is not at a byte boundary.
func selectedRuns(bitmap []byte, offset, n, maxRuns int) []int32 {
	if offset%8 != 0 {
		return nil
	}
	bitmap = bitmap[offset/8:]
	var runs []int32
	for i := 0; ; {
		start := nextBit(bitmap, i, n, true)
		if start >= n {
			return runs
		}
		end := nextBit(bitmap, start, n, false)
		if len(runs)/2 >= maxRuns {
			return nil
		}
		runs = append(runs, int32(start), int32(end))
		i = end
	}
}

// nextBit returns the first position p >= i (p < n) whose bit equals want, or n.
func nextBit(bitmap []byte, i, n int, want bool) int {
	for i < n {
		wi := i / 64
		var w uint64
		if b := bitmap[wi*8:]; len(b) >= 8 {
			w = binary.LittleEndian.Uint64(b)
		} else {
			var tail [8]byte
			copy(tail[:], b)
			w = binary.LittleEndian.Uint64(tail[:])
		}
		if !want {
			w = ^w
		}
		w &= ^uint64(0) << (i % 64)
		if w != 0 {
			return min(wi*64+bits.TrailingZeros64(w), n)
		}
		i = (wi + 1) * 64
	}
	return n
}

// filterRuns returns a batch with the rows of batch in runs (selectedRuns), kept rows in all.
func filterRuns(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch, runs []int32, kept int) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, batch.NumCols())
	defer releaseArrays(cols)
	var idx []int32 // built on first use by a column without a run copy
	for i, c := range batch.Columns() {
		if t := copyRunsTyped(tc.Alloc, c, runs, kept); t != nil {
			cols[i] = t
			continue
		}
		if idx == nil {
			idx = make([]int32, 0, kept)
			for r := 0; r < len(runs); r += 2 {
				for j := runs[r]; j < runs[r+1]; j++ {
					idx = append(idx, j)
				}
			}
		}
		t, err := TakeArrayRows(ctx, tc, c, idx)
		if err != nil {
			return nil, err
		}
		cols[i] = t
	}
	return array.NewRecordBatch(batch.Schema(), cols, int64(kept)), nil
}

// copyRunsTyped returns the rows of a in runs copied run by run, or nil when a's layout has no
// run copy here.
func copyRunsTyped(mem memory.Allocator, a arrow.Array, runs []int32, kept int) arrow.Array {
	data := a.Data()
	switch a.DataType().ID() {
	case arrow.INT64, arrow.UINT64, arrow.FLOAT64, arrow.TIMESTAMP, arrow.DATE64, arrow.DURATION:
		return copyRunsFixed[uint64](mem, data, runs, kept)
	case arrow.INT32, arrow.UINT32, arrow.FLOAT32, arrow.DATE32, arrow.TIME32:
		return copyRunsFixed[uint32](mem, data, runs, kept)
	case arrow.INT16, arrow.UINT16:
		return copyRunsFixed[uint16](mem, data, runs, kept)
	case arrow.INT8, arrow.UINT8:
		return copyRunsFixed[uint8](mem, data, runs, kept)
	case arrow.DECIMAL128:
		return copyRunsFixed[[2]uint64](mem, data, runs, kept)
	case arrow.BOOL:
		return copyRunsBools(mem, data, runs, kept)
	case arrow.STRING:
		return copyRunsStrings(mem, a.(*array.String), runs, kept)
	}
	return nil
}

// copyRunsFixed copies the runs of a fixed-width array whose elements are sizeof(T) bytes.
func copyRunsFixed[T any](mem memory.Allocator, data arrow.ArrayData, runs []int32, kept int) arrow.Array {
	var zero T
	width := int(unsafe.Sizeof(zero))
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(kept * width)
	src := data.Buffers()[1]
	if kept > 0 && src != nil && src.Len() > 0 {
		from := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(src.Bytes()))), src.Len()/width)[data.Offset():]
		to := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(values.Bytes()))), kept)
		pos := 0
		for r := 0; r < len(runs); r += 2 {
			pos += copy(to[pos:], from[runs[r]:runs[r+1]])
		}
	}
	return finishRuns(mem, data, runs, kept, values, nil)
}

// copyRunsBools copies the runs of a boolean array.
func copyRunsBools(mem memory.Allocator, data arrow.ArrayData, runs []int32, kept int) arrow.Array {
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(int(bitutil.BytesForBits(int64(kept))))
	clear(values.Bytes())
	if src := data.Buffers()[1]; src != nil {
		copyBitRuns(src.Bytes(), data.Offset(), runs, values.Bytes())
	}
	return finishRuns(mem, data, runs, kept, values, nil)
}

// copyRunsStrings copies the runs of a UTF-8 string array: its offsets shifted, its bytes in
// one copy per run.
func copyRunsStrings(mem memory.Allocator, a *array.String, runs []int32, kept int) arrow.Array {
	srcOffs := a.ValueOffsets()
	total := 0
	for r := 0; r < len(runs); r += 2 {
		total += int(srcOffs[runs[r+1]] - srcOffs[runs[r]])
	}
	offsets := memory.NewResizableBuffer(mem)
	defer offsets.Release()
	offsets.Resize((kept + 1) * 4)
	offs := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(offsets.Bytes()))), kept+1)
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(total)
	to, from := values.Bytes(), a.ValueBytes()
	base := int(srcOffs[0])
	pos, at := 0, int32(0)
	for r := 0; r < len(runs); r += 2 {
		start, end := runs[r], runs[r+1]
		shift := at - srcOffs[start]
		for j := start; j < end; j++ {
			offs[pos] = srcOffs[j] + shift
			pos++
		}
		size := srcOffs[end] - srcOffs[start]
		copy(to[at:at+size], from[int(srcOffs[start])-base:int(srcOffs[end])-base])
		at += size
	}
	offs[kept] = at
	return finishRuns(mem, a.Data(), runs, kept, offsets, values)
}

// copyBitRuns copies the bits of runs (rows of src from bit offset off) to dst, packed.
func copyBitRuns(src []byte, off int, runs []int32, dst []byte) {
	pos := 0
	for r := 0; r < len(runs); r += 2 {
		n := int(runs[r+1] - runs[r])
		bitutil.CopyBitmap(src, off+int(runs[r]), n, dst, pos)
		pos += n
	}
}

// finishRuns builds the result array of data's type from its value buffers (second and third),
// with the validity of the rows in runs.
func finishRuns(mem memory.Allocator, data arrow.ArrayData, runs []int32, kept int, b1, b2 *memory.Buffer) arrow.Array {
	var validity *memory.Buffer
	nulls := 0
	if data.NullN() != 0 && data.Buffers()[0] != nil { // NullN is -1 when unknown (a slice)
		validity = memory.NewResizableBuffer(mem)
		defer validity.Release()
		validity.Resize(int(bitutil.BytesForBits(int64(kept))))
		clear(validity.Bytes())
		copyBitRuns(data.Buffers()[0].Bytes(), data.Offset(), runs, validity.Bytes())
		nulls = kept - bitutil.CountSetBits(validity.Bytes(), 0, kept)
		if nulls == 0 {
			validity = nil
		}
	}
	buffers := []*memory.Buffer{validity, b1}
	if b2 != nil {
		buffers = append(buffers, b2)
	}
	out := array.NewData(data.DataType(), kept, buffers, nil, nulls, 0)
	defer out.Release()
	return array.MakeFromData(out)
}
