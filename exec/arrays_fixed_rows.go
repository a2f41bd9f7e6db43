package exec

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/gather"
)

// Fixed-size rows: arrays whose every row is the same number of value bytes and that have no
// NULLs (numbers, decimals, fixed-size binary, and fixed-size lists of fixed-width numbers).
// Such a column's rows can be copied and gathered as plain bytes, whatever its type.

// FixedRowWidth returns the bytes of one row of arrays of type dt when they can hold fixed-size
// rows (see FixedRowBytes), else 0.
func FixedRowWidth(dt arrow.DataType) int {
	switch t := dt.(type) {
	case *arrow.FixedSizeListType:
		elem, ok := t.Elem().(arrow.FixedWidthDataType)
		if !ok || t.Elem().ID() == arrow.BOOL {
			return 0
		}
		return elem.BitWidth() / 8 * int(t.Len())
	case arrow.FixedWidthDataType:
		switch dt.ID() {
		case arrow.BOOL, arrow.DICTIONARY, arrow.EXTENSION:
			return 0
		}
		return t.BitWidth() / 8
	}
	return 0
}

// FixedRowBytes returns a's values from its first row on, FixedRowWidth(a's type) bytes a row,
// when a has fixed-size rows and no NULLs (for a fixed-size list, nor NULL elements); ok is
// false otherwise. The bytes are a's own: read them, never write them.
func FixedRowBytes(a arrow.Array) (rows []byte, ok bool) {
	width := FixedRowWidth(a.DataType())
	if width == 0 || a.NullN() != 0 {
		return nil, false
	}
	data := a.Data()
	start := data.Offset() * width
	if lt, isList := data.DataType().(*arrow.FixedSizeListType); isList {
		// The list's offset counts lists; the child's counts elements.
		data = data.Children()[0]
		if data.NullN() != 0 {
			return nil, false
		}
		start += data.Offset() * (width / int(lt.Len()))
	}
	if a.Len() == 0 {
		return nil, true
	}
	buf := data.Buffers()[1]
	if buf == nil || buf.Len() < start+a.Len()*width {
		return nil, false
	}
	return buf.Bytes()[start : start+a.Len()*width], true
}

// NewFixedRows makes an array of type dt (FixedRowWidth(dt) > 0) over n rows of values and no
// NULLs; the array holds its own reference to values.
func NewFixedRows(dt arrow.DataType, values *memory.Buffer, n int) arrow.Array {
	if lt, ok := dt.(*arrow.FixedSizeListType); ok {
		child := array.NewData(lt.Elem(), n*int(lt.Len()), []*memory.Buffer{nil, values}, nil, 0, 0)
		defer child.Release()
		out := array.NewData(dt, n, []*memory.Buffer{nil}, []arrow.ArrayData{child}, 0, 0)
		defer out.Release()
		return array.MakeFromData(out)
	}
	out := array.NewData(dt, n, []*memory.Buffer{nil, values}, nil, 0, 0)
	defer out.Release()
	return array.MakeFromData(out)
}

// TakeFixedRows returns a new array of type dt whose row i is row idx[i] of rows (fixed-size
// rows of FixedRowWidth(dt) bytes, as FixedRowBytes gives them). Every index must be in range.
func TakeFixedRows(mem memory.Allocator, dt arrow.DataType, rows []byte, idx []int32) arrow.Array {
	width := FixedRowWidth(dt)
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(len(idx) * width)
	if len(idx) > 0 {
		to := values.Bytes()
		switch width {
		case 1:
			takeElems[uint8](to, rows, idx)
		case 2:
			takeElems[uint16](to, rows, idx)
		case 4:
			gather.Uint32(elems[uint32](to), elems[uint32](rows), idx)
		case 8:
			gather.Uint64(elems[uint64](to), elems[uint64](rows), idx)
		case 16:
			takeElems[[2]uint64](to, rows, idx)
		default:
			for i, j := range idx {
				copy(to[i*width:(i+1)*width], rows[int(j)*width:])
			}
		}
	}
	return NewFixedRows(dt, values, len(idx))
}

// takeElems sets element i of to (elements of T) to element idx[i] of from.
func takeElems[T any](to, from []byte, idx []int32) {
	dst, src := elems[T](to)[:len(idx)], elems[T](from)
	for i, j := range idx {
		dst[i] = src[j]
	}
}

// elems is b as elements of T (b's start aligned for T; a partial last element is left out).
func elems[T any](b []byte) []T {
	var zero T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(zero)))
}

// RowRef names row Row of the Batch-th of several arrays.
type RowRef struct {
	Batch, Row int32
}

// TakeFixedRowRefs returns a new array of type dt whose row i is row refs[i].Row of
// sources[refs[i].Batch] (each the fixed-size rows of one array, as FixedRowBytes gives them).
// Meant for wide rows, which it copies one at a time; every ref must be in range.
func TakeFixedRowRefs(mem memory.Allocator, dt arrow.DataType, sources [][]byte, refs []RowRef) arrow.Array {
	width := FixedRowWidth(dt)
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(len(refs) * width)
	to := values.Bytes()
	for i, ref := range refs {
		from := int(ref.Row) * width
		copy(to[i*width:(i+1)*width], sources[ref.Batch][from:from+width])
	}
	return NewFixedRows(dt, values, len(refs))
}

// SourceRun is N consecutive rows of a take from several sources (TakeFixedRowRuns), all from
// source Source.
type SourceRun struct {
	Source, N int32
}

// TakeFixedRowRuns returns a new array of type dt whose rows are taken from several sources
// (each the fixed-size rows of one array, as FixedRowBytes gives them) run by run: the rows of
// runs[0] are rows idx[0:runs[0].N] of sources[runs[0].Source], then the next run's follow.
// For rows picked in runs from few sources (a training read's windows) it picks as fast as
// TakeFixedRows. Every index must be in range.
func TakeFixedRowRuns(mem memory.Allocator, dt arrow.DataType, sources [][]byte, runs []SourceRun, idx []int32) arrow.Array {
	width := FixedRowWidth(dt)
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(len(idx) * width)
	to := values.Bytes()
	at := 0
	for _, run := range runs {
		n := int(run.N)
		dst, from, rows := to[at*width:(at+n)*width], sources[run.Source], idx[at:at+n]
		switch width {
		case 1:
			takeElems[uint8](dst, from, rows)
		case 2:
			takeElems[uint16](dst, from, rows)
		case 4:
			gather.Uint32(elems[uint32](dst), elems[uint32](from), rows)
		case 8:
			gather.Uint64(elems[uint64](dst), elems[uint64](from), rows)
		case 16:
			takeElems[[2]uint64](dst, from, rows)
		default:
			for i, j := range rows {
				copy(dst[i*width:(i+1)*width], from[int(j)*width:])
			}
		}
		at += n
	}
	return NewFixedRows(dt, values, len(idx))
}
