package exec

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// RowRef names one row of one of several arrays: row Row of sources[Array].
type RowRef struct {
	Array, Row int32
}

// TakeRowRefs gathers rows from several arrays of one type into one array, row i being refs[i],
// in a single pass with no intermediate copy. It covers the layouts training reads stream:
// fixed-width values (NULLs allowed) and fixed-size lists of fixed-width values without NULL
// elements. For any other layout, or when sources is empty, it returns nil and the caller
// concatenates and takes. Every ref must be in range.
func TakeRowRefs(mem memory.Allocator, sources []arrow.Array, refs []RowRef) arrow.Array {
	if len(sources) == 0 {
		return nil
	}
	dt := sources[0].DataType()
	width := 0
	switch t := dt.(type) {
	case arrow.FixedWidthDataType:
		switch dt.ID() {
		case arrow.BOOL, arrow.DICTIONARY, arrow.EXTENSION:
			return nil
		}
		width = t.BitWidth() / 8
	case *arrow.FixedSizeListType:
		elem, ok := t.Elem().(arrow.FixedWidthDataType)
		if !ok || t.Elem().ID() == arrow.BOOL {
			return nil
		}
		width = elem.BitWidth() / 8 * int(t.Len())
		for _, s := range sources {
			if s.Data().Children()[0].NullN() != 0 {
				return nil
			}
		}
	default:
		return nil
	}
	if width == 0 {
		return nil
	}
	values := takeRefValues(mem, sources, refs, width)
	defer values.Release()
	validity, nulls := takeRefValidity(mem, sources, refs)
	if validity != nil {
		defer validity.Release()
	}
	n := len(refs)
	if lt, ok := dt.(*arrow.FixedSizeListType); ok {
		child := array.NewData(lt.Elem(), n*int(lt.Len()), []*memory.Buffer{nil, values}, nil, 0, 0)
		defer child.Release()
		out := array.NewData(dt, n, []*memory.Buffer{validity}, []arrow.ArrayData{child}, nulls, 0)
		defer out.Release()
		return array.MakeFromData(out)
	}
	out := array.NewData(dt, n, []*memory.Buffer{validity, values}, nil, nulls, 0)
	defer out.Release()
	return array.MakeFromData(out)
}

// takeRefValues copies width bytes per row from each ref's source row into a new buffer.
func takeRefValues(mem memory.Allocator, sources []arrow.Array, refs []RowRef, width int) *memory.Buffer {
	values := memory.NewResizableBuffer(mem)
	values.Resize(len(refs) * width)
	if len(refs) == 0 {
		return values
	}
	// from[a] is source a's value bytes from its first row on.
	from := make([][]byte, len(sources))
	for a, s := range sources {
		from[a] = fixedRowBytes(s, width)
	}
	switch width {
	case 1:
		copyRefs[uint8](values.Bytes(), from, refs)
	case 2:
		copyRefs[uint16](values.Bytes(), from, refs)
	case 4:
		copyRefs[uint32](values.Bytes(), from, refs)
	case 8:
		copyRefs[uint64](values.Bytes(), from, refs)
	case 16:
		copyRefs[[2]uint64](values.Bytes(), from, refs)
	default:
		to := values.Bytes()
		for i, r := range refs {
			copy(to[i*width:(i+1)*width], from[r.Array][int(r.Row)*width:])
		}
	}
	return values
}

// fixedRowBytes returns the bytes of a's values from its first row (its offset applied), width
// bytes a row; for a fixed-size list, of its child's values.
func fixedRowBytes(a arrow.Array, width int) []byte {
	data := a.Data()
	start := data.Offset() * width
	if lt, ok := data.DataType().(*arrow.FixedSizeListType); ok {
		// The list's offset counts lists; the child's counts elements.
		data = data.Children()[0]
		start += data.Offset() * (width / int(lt.Len()))
	}
	buf := data.Buffers()[1]
	if buf == nil || buf.Len() < start {
		return nil
	}
	return buf.Bytes()[start:]
}

// copyRefs sets row i of to (elements of T) to row refs[i] of from.
func copyRefs[T any](to []byte, from [][]byte, refs []RowRef) {
	var zero T
	width := int(unsafe.Sizeof(zero))
	typed := make([][]T, len(from))
	for a, b := range from {
		if len(b) >= width {
			typed[a] = unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/width)
		}
	}
	out := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(to))), len(refs))
	for i, r := range refs {
		out[i] = typed[r.Array][r.Row]
	}
}

// takeRefValidity gathers the validity bits of the refs' rows; it returns nil and 0 when no
// picked row is NULL. The caller releases the buffer.
func takeRefValidity(mem memory.Allocator, sources []arrow.Array, refs []RowRef) (*memory.Buffer, int) {
	anyNulls := false
	for _, s := range sources {
		if s.NullN() != 0 {
			anyNulls = true
			break
		}
	}
	if !anyNulls {
		return nil, 0
	}
	validity := memory.NewResizableBuffer(mem)
	validity.Resize(int(bitutil.BytesForBits(int64(len(refs)))))
	to := validity.Bytes()
	clear(to)
	nulls := 0
	for i, r := range refs {
		if sources[r.Array].IsValid(int(r.Row)) {
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
