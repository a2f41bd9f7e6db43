// Package fixedchunk decodes the column chunks of flat fixed-width Parquet columns (physical
// type INT32, INT64, FLOAT or DOUBLE; required or optional, never repeated) straight from their
// pages into Arrow arrays: plain and dictionary-encoded pages, data pages of either version,
// integers widened to decimal128 where the column is a decimal. It exists for speed: arrow-go's
// Arrow reader decodes such a column through a levels buffer, a dictionary converter that grows
// its lookup table value by value, and a separate widening pass for decimals; this reads each
// value once into the array it ends in. What it does not decode (other encodings, nesting,
// other types) a caller reads with arrow-go's reader; Supports says which is which.
//
// A flat BYTE_ARRAY column whose data pages are all dictionary-encoded it reads as its indices
// (NewIndexReader): int32 arrays of positions in the chunk's dictionary (Dictionary), which the
// caller expands into values.
package fixedchunk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Supports reports whether a column chunk of column col, read as Arrow type typ (the type
// arrow-go's reader gives the column), is decoded here: a column that is not repeated and
// nested at most as an optional field, of physical type INT32 read as int32, date32 or a
// decimal, INT64 read as int64, a timestamp, time64 or a decimal, FLOAT read as float32 or
// DOUBLE read as float64, whose chunk lists its encodings and uses none but PLAIN, RLE (for
// levels) and dictionary encoding.
func Supports(col *schema.Column, cc *metadata.ColumnChunkMetaData, typ arrow.DataType) bool {
	if col.MaxRepetitionLevel() != 0 || col.MaxDefinitionLevel() > 1 || cc.Type() != col.PhysicalType() {
		return false
	}
	if _, ok := layoutOf(col.PhysicalType(), typ); !ok {
		return false
	}
	if len(cc.Encodings()) == 0 {
		return false // a writer that lists none: its pages could be of any encoding
	}
	for _, e := range cc.Encodings() {
		switch e {
		case parquet.Encodings.Plain, parquet.Encodings.RLE, parquet.Encodings.PlainDict, parquet.Encodings.RLEDict:
		default:
			return false
		}
	}
	return true
}

// layout is how a physical value becomes an array element: from size bytes to elem bytes,
// widened to a decimal128 (sign-extended) when widen. An index layout reads dictionary indices
// (4-byte elements) and keeps the dictionary's byte arrays as they are.
type layout struct {
	size, elem int
	widen      bool
	index      bool
}

func layoutOf(phys parquet.Type, typ arrow.DataType) (layout, bool) {
	id := typ.ID()
	switch phys {
	case parquet.Types.Int32:
		switch id {
		case arrow.INT32, arrow.DATE32:
			return layout{size: 4, elem: 4}, true
		case arrow.DECIMAL128:
			return layout{size: 4, elem: 16, widen: true}, true
		}
	case parquet.Types.Int64:
		switch id {
		case arrow.INT64, arrow.TIMESTAMP, arrow.TIME64:
			return layout{size: 8, elem: 8}, true
		case arrow.DECIMAL128:
			return layout{size: 8, elem: 16, widen: true}, true
		}
	case parquet.Types.Float:
		if id == arrow.FLOAT32 {
			return layout{size: 4, elem: 4}, true
		}
	case parquet.Types.Double:
		if id == arrow.FLOAT64 {
			return layout{size: 8, elem: 8}, true
		}
	}
	return layout{}, false
}

// Reader decodes one column chunk, batch by batch. It is not safe for concurrent use.
type Reader struct {
	pages  file.PageReader
	typ    arrow.DataType
	lay    layout
	maxDef int
	mem    memory.Allocator
	// dict is the chunk's dictionary in element layout, dictN entries.
	// An index reader keeps it as byte arrays instead: value j is
	// dictBytes[dictOffsets[j]:dictOffsets[j+1]].
	dict        []byte
	dictN       int
	dictOffsets []int32
	dictBytes   []byte
	haveDict    bool // the chunk's dictionary page is read
	// The current data page: left values (levels) of it not yet read, its definition levels
	// (nil for a required column), and its values: indices into dict, or plain values.
	left    int
	defs    *hybrid
	indices *hybrid
	plain   []byte
	scratch []uint32
}

// NewReader decodes the chunk whose pages pages reads (the page reader of a column chunk that
// Supports accepts, as read as typ), allocating its arrays from mem. Close releases the pages.
func NewReader(pages file.PageReader, col *schema.Column, typ arrow.DataType, mem memory.Allocator) (*Reader, error) {
	lay, ok := layoutOf(col.PhysicalType(), typ)
	if !ok || col.MaxRepetitionLevel() != 0 || col.MaxDefinitionLevel() > 1 {
		return nil, fmt.Errorf("column %s (%s) is not decoded as %s here", col.Path(), col.PhysicalType(), typ)
	}
	return &Reader{pages: pages, typ: typ, lay: lay, maxDef: int(col.MaxDefinitionLevel()), mem: mem,
		scratch: make([]uint32, 1024)}, nil
}

// NewIndexReader reads the chunk of a flat BYTE_ARRAY column (col) whose data pages are all
// dictionary-encoded as its indices: Next gives int32 arrays of positions in Dictionary. A plain
// data page is an error.
func NewIndexReader(pages file.PageReader, col *schema.Column, mem memory.Allocator) (*Reader, error) {
	if col.PhysicalType() != parquet.Types.ByteArray || col.MaxRepetitionLevel() != 0 || col.MaxDefinitionLevel() > 1 {
		return nil, fmt.Errorf("column %s (%s) is not read as dictionary indices here", col.Path(), col.PhysicalType())
	}
	return &Reader{pages: pages, typ: arrow.PrimitiveTypes.Int32, lay: layout{size: 4, elem: 4, index: true},
		maxDef: int(col.MaxDefinitionLevel()), mem: mem, scratch: make([]uint32, 1024)}, nil
}

// Dictionary is an index reader's dictionary once Next has read past its page: value j is
// bytes[offsets[j]:offsets[j+1]] (len(offsets) is one more than its values; nil before).
func (r *Reader) Dictionary() (offsets []int32, bytes []byte) { return r.dictOffsets, r.dictBytes }

// Close releases the page reader.
func (r *Reader) Close() error { return r.pages.Close() }

// Next decodes the chunk's next n rows into an array of the reader's type; an error when the
// chunk holds fewer or its pages are malformed.
func (r *Reader) Next(n int) (arrow.Array, error) {
	data := memory.NewResizableBuffer(r.mem)
	defer data.Release()
	data.Resize(n * r.lay.elem)
	valid, nulls, err := r.fill(data.Bytes(), n)
	if valid != nil {
		defer valid.Release()
	}
	if err != nil {
		return nil, err
	}
	buffers := []*memory.Buffer{nil, data}
	if nulls > 0 {
		buffers[0] = valid
	}
	d := array.NewData(r.typ, n, buffers, nil, nulls, 0)
	defer d.Release()
	return array.MakeFromData(d), nil
}

// fill decodes the chunk's next n rows into out (n elements), reading pages as it needs them;
// it returns their validity bitmap (nil while every row is valid) and their NULL count.
func (r *Reader) fill(out []byte, n int) (valid *memory.Buffer, nulls int, err error) {
	elem := r.lay.elem
	for filled := 0; filled < n; {
		if r.left == 0 {
			if err := r.nextPage(); err != nil {
				return valid, 0, err
			}
			continue
		}
		k := min(r.left, n-filled)
		m := k
		if r.defs != nil {
			if m, valid, err = r.levels(k, filled, n, valid); err != nil {
				return valid, 0, err
			}
		}
		seg := out[filled*elem : (filled+k)*elem]
		if err := r.values(seg[:m*elem], m); err != nil {
			return valid, 0, err
		}
		if m < k {
			spread(seg, valid.Bytes(), filled, k, m, elem)
		}
		nulls += k - m
		filled += k
		r.left -= k
	}
	return valid, nulls, nil
}

// nextPage makes the chunk's next data page current, reading a dictionary page on the way.
func (r *Reader) nextPage() error {
	for {
		if ok, err := advance(r.pages); !ok {
			if err != nil {
				return err
			}
			return errors.New("column chunk ends before its row group's rows")
		}
		var data []byte
		var n int
		var enc parquet.Encoding
		r.defs = nil
		switch p := r.pages.Page().(type) {
		case *file.DictionaryPage:
			if err := r.readDictionary(p); err != nil {
				return err
			}
			continue
		case *file.DataPageV1:
			data, n, enc = p.Data(), int(p.NumValues()), parquet.Encoding(p.Encoding())
			if r.maxDef > 0 {
				if p.DefinitionLevelEncoding() != parquet.Encodings.RLE {
					return fmt.Errorf("definition levels encoded as %s", p.DefinitionLevelEncoding())
				}
				if len(data) < 4 {
					return errTruncated
				}
				size := binary.LittleEndian.Uint32(data)
				if uint64(size) > uint64(len(data)-4) {
					return errTruncated
				}
				defs, err := newHybrid(data[4:4+size], 1)
				if err != nil {
					return err
				}
				r.defs, data = defs, data[4+size:]
			}
		case *file.DataPageV2:
			data, n, enc = p.Data(), int(p.NumValues()), parquet.Encoding(p.Encoding())
			dl, rl := int(p.DefinitionLevelByteLen()), int(p.RepetitionLevelByteLen())
			if rl != 0 || dl < 0 || dl > len(data) {
				return fmt.Errorf("data page of %d bytes with %d bytes of repetition and %d of definition levels in a flat column", len(data), rl, dl)
			}
			if r.maxDef > 0 {
				defs, err := newHybrid(data[:dl], 1)
				if err != nil {
					return err
				}
				r.defs = defs
			}
			data = data[dl:]
		default:
			continue
		}
		if n < 0 {
			return fmt.Errorf("data page of %d values", n)
		}
		if n == 0 {
			continue
		}
		switch enc {
		case parquet.Encodings.Plain:
			if r.lay.index {
				return errors.New("plain data page in a column read as dictionary indices")
			}
			r.indices, r.plain = nil, data
		case parquet.Encodings.PlainDict, parquet.Encodings.RLEDict:
			if !r.haveDict {
				return errors.New("dictionary-encoded data page before a dictionary page")
			}
			if len(data) < 1 {
				return errTruncated
			}
			h, err := newHybrid(data[1:], int(data[0]))
			if err != nil {
				return err
			}
			r.indices, r.plain = h, nil
		default:
			return fmt.Errorf("data page encoded as %s", enc)
		}
		r.left = n
		return nil
	}
}

// advance moves pages to its next page: false at the chunk's end or on an error. A panic of the
// page reader (arrow-go's reader dereferences a damaged page header's missing parts) is an error.
func advance(pages file.PageReader) (ok bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			ok, err = false, fmt.Errorf("damaged page header: %v", v)
		}
	}()
	if pages.Next() {
		return true, nil
	}
	return false, pages.Err()
}

// readDictionary keeps the dictionary page's plain values, in element layout.
func (r *Reader) readDictionary(p *file.DictionaryPage) error {
	enc := parquet.Encoding(p.Encoding())
	if enc != parquet.Encodings.Plain && enc != parquet.Encodings.PlainDict {
		return fmt.Errorf("dictionary page encoded as %s", enc)
	}
	n := int(p.NumValues())
	data := p.Data()
	if r.lay.index {
		return r.readByteArrayDictionary(n, data)
	}
	if n < 0 || n*r.lay.size > len(data) {
		return fmt.Errorf("dictionary page of %d bytes declares %d values", len(data), n)
	}
	size := max(n, 1) * r.lay.elem
	r.dict = bytesOf(make([]uint64, (size+7)/8))[:size] // aligned for every element type
	r.haveDict = true
	r.dictN = n
	convert(r.dict, data[:n*r.lay.size], r.lay)
	return nil
}

// readByteArrayDictionary keeps a dictionary page's n plain byte arrays (each a 4-byte
// little-endian length, then its bytes).
func (r *Reader) readByteArrayDictionary(n int, data []byte) error {
	if n < 0 || n > len(data)/4 {
		return fmt.Errorf("dictionary page of %d bytes declares %d values", len(data), n)
	}
	offsets := make([]int32, n+1)
	values := make([]byte, 0, len(data)-4*n)
	for j := range n {
		if len(data) < 4 {
			return errTruncated
		}
		size := binary.LittleEndian.Uint32(data)
		if uint64(size) > uint64(len(data)-4) {
			return errTruncated
		}
		values = append(values, data[4:4+size]...)
		offsets[j+1] = int32(len(values))
		data = data[4+size:]
	}
	r.dictOffsets, r.dictBytes, r.dictN = offsets, values, n
	r.haveDict = true
	return nil
}

// levels reads k definition levels for rows [at, at+k) of a batch of n rows, setting their
// validity bits (valid, made on the first null, with every row before it valid), and returns
// how many are not null.
func (r *Reader) levels(k, at, n int, valid *memory.Buffer) (int, *memory.Buffer, error) {
	m := 0
	for done := 0; done < k; {
		if err := r.defs.run(); err != nil {
			return 0, valid, err
		}
		c := min(r.defs.left, k-done)
		if r.defs.rle {
			switch r.defs.value {
			case 1:
				if valid != nil {
					bitutil.SetBitsTo(valid.Bytes(), int64(at+done), int64(c), true)
				}
				m += c
			case 0:
				if valid == nil {
					valid = newValidity(r.mem, n, at+done)
				}
				bitutil.SetBitsTo(valid.Bytes(), int64(at+done), int64(c), false)
			}
			r.defs.skip(c)
		} else {
			for o := 0; o < c; {
				s := r.scratch[:min(c-o, len(r.scratch))]
				r.defs.unpack(s)
				for i, v := range s {
					if v == 0 && valid == nil {
						valid = newValidity(r.mem, n, at+done+o+i)
					}
					if valid != nil {
						bitutil.SetBitTo(valid.Bytes(), at+done+o+i, v == 1)
					}
					m += int(v)
				}
				o += len(s)
			}
		}
		done += c
	}
	return m, valid, nil
}

// newValidity is a validity bitmap of n rows whose first valid rows are set.
func newValidity(mem memory.Allocator, n, valid int) *memory.Buffer {
	b := memory.NewResizableBuffer(mem)
	b.Resize(int(bitutil.BytesForBits(int64(n))))
	clear(b.Bytes())
	bitutil.SetBitsTo(b.Bytes(), 0, int64(valid), true)
	return b
}

// values decodes the page's next m values into dst (m elements).
func (r *Reader) values(dst []byte, m int) error {
	lay := r.lay
	if r.indices == nil {
		need := m * lay.size
		if need > len(r.plain) {
			return errTruncated
		}
		convert(dst, r.plain[:need], lay)
		r.plain = r.plain[need:]
		return nil
	}
	h := r.indices
	for done := 0; done < m; {
		if err := h.run(); err != nil {
			return err
		}
		c := min(h.left, m-done)
		at := dst[done*lay.elem : (done+c)*lay.elem]
		if h.rle {
			if int(h.value) >= r.dictN {
				return fmt.Errorf("dictionary index %d outside a dictionary of %d values", h.value, r.dictN)
			}
			if lay.index {
				var v [4]byte
				binary.LittleEndian.PutUint32(v[:], h.value)
				fill(at, v[:])
			} else {
				fill(at, r.dict[int(h.value)*lay.elem:][:lay.elem])
			}
			h.skip(c)
		} else if lay.index {
			idx := castBytes[uint32](at)
			h.unpack(idx)
			for _, x := range idx {
				if int(x) >= r.dictN {
					return fmt.Errorf("dictionary index %d outside a dictionary of %d values", x, r.dictN)
				}
			}
		} else {
			for o := 0; o < c; {
				s := r.scratch[:min(c-o, len(r.scratch))]
				h.unpack(s)
				if !gather(at[o*lay.elem:(o+len(s))*lay.elem], r.dict, r.dictN, s, lay.elem) {
					return fmt.Errorf("dictionary index outside a dictionary of %d values", r.dictN)
				}
				o += len(s)
			}
		}
		done += c
	}
	return nil
}

// convert writes the plain values src as elements to dst, widening as lay says. src need not
// be aligned (it follows a page's levels).
func convert(dst, src []byte, lay layout) {
	if !lay.widen {
		copy(dst, src)
		return
	}
	out := castBytes[[2]uint64](dst)
	if lay.size == 4 {
		for i := range len(src) / 4 {
			v := int64(int32(binary.LittleEndian.Uint32(src[4*i:])))
			out[i] = [2]uint64{uint64(v), uint64(v >> 63)}
		}
		return
	}
	for i := range len(src) / 8 {
		v := int64(binary.LittleEndian.Uint64(src[8*i:]))
		out[i] = [2]uint64{uint64(v), uint64(v >> 63)}
	}
}

// gather writes dict[idx[i]] to element i of dst; false when an index is outside the
// dictionary's n entries.
func gather(dst, dict []byte, n int, idx []uint32, elem int) bool {
	switch elem {
	case 4:
		return gatherOf(castBytes[uint32](dst), castBytes[uint32](dict)[:n], idx)
	case 8:
		return gatherOf(castBytes[uint64](dst), castBytes[uint64](dict)[:n], idx)
	default:
		return gatherOf(castBytes[[2]uint64](dst), castBytes[[2]uint64](dict)[:n], idx)
	}
}

func gatherOf[T any](dst, dict []T, idx []uint32) bool {
	dst = dst[:len(idx)]
	for i, x := range idx {
		if int(x) >= len(dict) {
			return false
		}
		dst[i] = dict[x]
	}
	return true
}

// fill repeats the element v over dst.
func fill(dst, v []byte) {
	if len(dst) == 0 {
		return
	}
	n := copy(dst, v)
	for n < len(dst) {
		n += copy(dst[n:], dst[:n])
	}
}

// spread moves the m values packed at the front of seg (k elements of elem bytes, rows
// [at, at+k) of the validity bitmap) to the rows that are valid, zeroing the null rows.
func spread(seg, validity []byte, at, k, m, elem int) {
	j := m - 1
	for i := k - 1; i >= 0; i-- {
		dst := seg[i*elem : (i+1)*elem]
		if bitutil.BitIsSet(validity, at+i) {
			if j != i {
				copy(dst, seg[j*elem:(j+1)*elem])
			}
			j--
		} else {
			clear(dst)
		}
	}
}

// castBytes views b as a slice of T (b holds whole Ts; the slices of Go and arrow-go's
// allocators are aligned for any of the element types used here).
func castBytes[T any](b []byte) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(b) < size {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size)
}

// bytesOf views s as bytes.
func bytesOf[T any](s []T) []byte {
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}
