package iceberg

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// expandDictionary turns a dictionary array of strings or binary values with int32 indices (what
// arrow-go's Parquet reader yields for a dictionary-encoded column read as a dictionary) into a
// plain array of the value type holding the same values: a NULL index gives NULL. It sizes the
// result once from the dictionary's value lengths and writes each value's bytes (short values
// as two machine words, see expandShort), which is far cheaper than decoding the column value by
// value through a builder, as the reader does when the column is not read as a dictionary.
func expandDictionary(d *array.Dictionary, mem memory.Allocator) (arrow.Array, error) {
	dt := d.DataType().(*arrow.DictionaryType)
	if dt.IndexType.ID() != arrow.INT32 {
		return nil, fmt.Errorf("expand dictionary of %s: index type is not int32", dt)
	}
	dict := d.Dictionary().Data()
	if dict.NullN() > 0 {
		return nil, fmt.Errorf("expand dictionary of %s: the dictionary holds NULLs", dt)
	}
	if dt.ValueType.ID() != arrow.STRING && dt.ValueType.ID() != arrow.BINARY {
		return nil, fmt.Errorf("expand dictionary of %s: not a string or binary dictionary", dt)
	}
	dictOffsets := arrow.Int32Traits.CastFromBytes(dict.Buffers()[1].Bytes())[dict.Offset():]
	dictOffsets = dictOffsets[:dict.Len()+1]
	var dictBytes []byte
	if b := dict.Buffers()[2]; b != nil {
		dictBytes = b.Bytes()
	}
	return expandIndices(dt.ValueType, d.Indices().(*array.Int32), dictOffsets, dictBytes, mem)
}

// expandIndices makes an array of type typ (string or binary) whose row i is the dictionary's
// value indices[i] (NULL where the index is NULL): value j of the dictionary is
// dictBytes[dictOffsets[j]:dictOffsets[j+1]]. Every byte of the buffers it allocates from mem
// is written.
func expandIndices(typ arrow.DataType, idx *array.Int32, dictOffsets []int32, dictBytes []byte, mem memory.Allocator) (arrow.Array, error) {
	switch typ.ID() {
	case arrow.STRING, arrow.BINARY:
	default:
		return nil, fmt.Errorf("expand dictionary indices into %s: not a string or binary type", typ)
	}
	idxData := idx.Data()
	indices := idx.Int32Values()
	n := idx.Len()
	var valid []byte
	nulls := idx.NullN()
	if nulls > 0 {
		valid = idxData.Buffers()[0].Bytes()
	}
	isValid := validity{bits: valid, offset: idxData.Offset()}

	offsets := memory.NewResizableBuffer(mem)
	offsets.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	out := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
	out[0] = 0
	data := memory.NewResizableBuffer(mem)
	var err error
	if maxLen := maxValueLen(dictOffsets); maxLen <= shortValue && int64(n)*int64(maxLen) <= math.MaxInt32 {
		err = expandShort(indices, isValid, dictOffsets, dictBytes, maxLen, out, data)
	} else {
		err = expandLong(indices, isValid, dictOffsets, dictBytes, out, data)
	}
	if err != nil {
		offsets.Release()
		data.Release()
		return nil, fmt.Errorf("expand dictionary of %s: %w", typ, err)
	}
	var bitmap *memory.Buffer
	if nulls > 0 {
		bitmap = memory.NewResizableBuffer(mem)
		bitmap.Resize(int(bitutil.BytesForBits(int64(n))))
		clear(bitmap.Bytes())
		bitutil.CopyBitmap(valid, idxData.Offset(), n, bitmap.Bytes(), 0)
	}
	res := array.NewData(typ, n, []*memory.Buffer{bitmap, offsets, data}, nil, nulls, 0)
	for _, b := range []*memory.Buffer{bitmap, offsets, data} {
		if b != nil {
			b.Release()
		}
	}
	defer res.Release()
	return array.MakeFromData(res), nil
}

// shortValue is the longest dictionary value expandShort handles.
const shortValue = 32

func maxValueLen(offsets []int32) int {
	m := 0
	for j := 1; j < len(offsets); j++ {
		m = max(m, int(offsets[j]-offsets[j-1]))
	}
	return m
}

// expandShort expands a dictionary whose values are at most shortValue bytes in one pass:
// each value is stored as whole 8-byte words (as many as the longest value needs), whatever its
// length, into a buffer sized for the longest value per row plus one value's words of slack,
// and the end offset advances by its length; data is finally cut to the bytes written. Unlike
// a copy per value this makes no call.
func expandShort(indices []int32, isValid validity, dictOffsets []int32, dictBytes []byte, maxLen int, out []int32, data *memory.Buffer) error {
	nd := len(dictOffsets) - 1
	k := max((maxLen+7)/8, 1)
	words := make([]uint64, nd*k)
	lens := make([]int32, nd)
	for j := range lens {
		var b [shortValue]byte
		copy(b[:], dictBytes[dictOffsets[j]:dictOffsets[j+1]])
		for w := range k {
			words[j*k+w] = binary.LittleEndian.Uint64(b[8*w:])
		}
		lens[j] = dictOffsets[j+1] - dictOffsets[j]
	}
	data.Resize(len(indices)*maxLen + 8*k)
	dst := data.Bytes()
	var o int32
	if k == 1 && isValid.bits == nil {
		// Values of at most 8 bytes and no NULLs, the common case: one word a row.
		for i, ix := range indices {
			if uint32(ix) >= uint32(nd) {
				return fmt.Errorf("index %d outside a dictionary of %d values", ix, nd)
			}
			binary.LittleEndian.PutUint64(dst[o:], words[ix])
			o += lens[ix]
			out[i+1] = o
		}
		data.ResizeNoShrink(int(o))
		return nil
	}
	for i, ix := range indices {
		if isValid.at(i) {
			if uint32(ix) >= uint32(nd) {
				return fmt.Errorf("index %d outside a dictionary of %d values", ix, nd)
			}
			src := words[int(ix)*k : int(ix)*k+k]
			at := dst[o : int(o)+8*k]
			for w, v := range src {
				binary.LittleEndian.PutUint64(at[8*w:], v)
			}
			o += lens[ix]
		}
		out[i+1] = o
	}
	data.ResizeNoShrink(int(o))
	return nil
}

// expandLong expands any dictionary in two passes: the offsets (and so the size), then the
// bytes of each value.
func expandLong(indices []int32, isValid validity, dictOffsets []int32, dictBytes []byte, out []int32, data *memory.Buffer) error {
	nd := len(dictOffsets) - 1
	var total int64
	for i, ix := range indices {
		if isValid.at(i) {
			if uint32(ix) >= uint32(nd) {
				return fmt.Errorf("index %d outside a dictionary of %d values", ix, nd)
			}
			total += int64(dictOffsets[ix+1] - dictOffsets[ix])
			if total > math.MaxInt32 {
				return fmt.Errorf("%d rows hold more than 2 GiB of values", len(indices))
			}
		}
		out[i+1] = int32(total)
	}
	data.Resize(int(total))
	dst := data.Bytes()
	for i, ix := range indices {
		if out[i+1] != out[i] {
			copy(dst[out[i]:out[i+1]], dictBytes[dictOffsets[ix]:dictOffsets[ix+1]])
		}
	}
	return nil
}

// validity reads a validity bitmap from offset on; without one every row is valid.
type validity struct {
	bits   []byte
	offset int
}

func (v validity) at(i int) bool { return v.bits == nil || bitutil.BitIsSet(v.bits, v.offset+i) }
