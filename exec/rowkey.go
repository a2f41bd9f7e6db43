package exec

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/cachedb/cachedb/internal/errs"
)

// RowKeyEncoder encodes the values of several columns at one row into a normalized byte string,
// so that two rows that are equal for GROUP BY, DISTINCT and join purposes encode to equal bytes,
// and rows that differ encode to different bytes.
//
// Guarantees:
//   - Each column's encoding is prefix-free (a NULL/value marker byte, then a fixed-width value or
//     a length-prefixed string), so the concatenation over the columns is unambiguous.
//   - NULL encodes as its own marker, so NULLs are equal to each other and group together; use
//     HasNull to exclude them where NULL never matches (join keys).
//   - float64: -0 and +0 encode the same; every NaN encodes the same.
//   - decimal128: the value is normalized (trailing zeros of the unscaled value are stripped), so
//     1.0 in a decimal(10,1) column and 1.00 in a decimal(10,2) column encode the same, whichever
//     encoder they come from.
//   - Integer widths int8…int64 all encode as int64, float32 as float64, so 7 in an int32 column
//     equals 7 in an int64 column.
//
// Across distinct numeric families (int64 against decimal or float64) encodings differ even for
// numerically equal values: callers comparing keys of different types (join sides) cast both to
// their common type first (exec.CommonType).
//
// An encoder reads the arrays it was built over and does not retain them: the caller keeps them
// alive while using it. It is not safe for concurrent use only because callers share dst buffers;
// the encoder itself is read-only after construction.
type RowKeyEncoder struct {
	cols []rowKeyColumn
}

// rowKeyKind selects the typed encoding of one column.
type rowKeyKind uint8

const (
	rowKeyNull rowKeyKind = iota
	rowKeyInt64
	rowKeyInt32
	rowKeyInt16
	rowKeyInt8
	rowKeyFloat64
	rowKeyFloat32
	rowKeyDecimal
	rowKeyString
	rowKeyBool
	rowKeyDate32
	rowKeyTimestamp
)

// Marker bytes that open every column's encoding.
const (
	rowKeyNullMarker  byte = 0
	rowKeyValueMarker byte = 1
)

// rowKeyColumn holds typed views of one column so that encoding a row never boxes a value.
type rowKeyColumn struct {
	kind  rowKeyKind
	arr   arrow.Array
	nulls bool // whether the array has any null
	i64   []int64
	i32   []int32
	i16   []int16
	i8    []int8
	f64   []float64
	f32   []float32
	dec   []decimal128.Num
	scale int32
	offs  []int32 // string offsets, absolute into data
	data  []byte  // string bytes
	bln   *array.Boolean
	date  []arrow.Date32
	ts    []arrow.Timestamp
}

// NewRowKeyEncoder builds an encoder over cols, which must all have the same length. It returns an
// errs.Unsupported error naming the type when a column's type cannot be encoded.
func NewRowKeyEncoder(cols []arrow.Array) (*RowKeyEncoder, error) {
	e := &RowKeyEncoder{cols: make([]rowKeyColumn, len(cols))}
	for i, arr := range cols {
		if i > 0 && arr.Len() != cols[0].Len() {
			return nil, errs.Internalf("row key column %d has %d rows, column 0 has %d", i, arr.Len(), cols[0].Len())
		}
		c := rowKeyColumn{arr: arr, nulls: arr.NullN() > 0}
		switch a := arr.(type) {
		case *array.Null:
			c.kind = rowKeyNull
		case *array.Int64:
			c.kind, c.i64 = rowKeyInt64, a.Int64Values()
		case *array.Int32:
			c.kind, c.i32 = rowKeyInt32, a.Int32Values()
		case *array.Int16:
			c.kind, c.i16 = rowKeyInt16, a.Int16Values()
		case *array.Int8:
			c.kind, c.i8 = rowKeyInt8, a.Int8Values()
		case *array.Float64:
			c.kind, c.f64 = rowKeyFloat64, a.Float64Values()
		case *array.Float32:
			c.kind, c.f32 = rowKeyFloat32, a.Float32Values()
		case *array.Decimal128:
			c.kind, c.dec = rowKeyDecimal, a.Values()
			c.scale = arr.DataType().(*arrow.Decimal128Type).Scale
		case *array.String:
			c.kind, c.offs = rowKeyString, a.ValueOffsets()
			if bufs := a.Data().Buffers(); len(bufs) > 2 && bufs[2] != nil {
				c.data = bufs[2].Bytes()
			}
		case *array.Boolean:
			c.kind, c.bln = rowKeyBool, a
		case *array.Date32:
			c.kind, c.date = rowKeyDate32, a.Date32Values()
		case *array.Timestamp:
			c.kind, c.ts = rowKeyTimestamp, a.TimestampValues()
		case *array.Time64: // a signed 64-bit count, encoded as a timestamp's
			c.kind, c.ts = rowKeyTimestamp, arrow.TimestampTraits.CastFromBytes(arrow.Time64Traits.CastToBytes(a.Time64Values()))
		default:
			return nil, errs.Unsupportedf("grouping or joining on a value of type %s is not supported", arr.DataType())
		}
		e.cols[i] = c
	}
	return e, nil
}

// HasNull reports whether any column is NULL at row.
func (e *RowKeyEncoder) HasNull(row int) bool {
	for i := range e.cols {
		c := &e.cols[i]
		if c.kind == rowKeyNull || (c.nulls && c.arr.IsNull(row)) {
			return true
		}
	}
	return false
}

// Append appends the key of row to dst and returns the extended slice.
func (e *RowKeyEncoder) Append(dst []byte, row int) []byte {
	for i := range e.cols {
		c := &e.cols[i]
		if c.kind == rowKeyNull || (c.nulls && c.arr.IsNull(row)) {
			dst = append(dst, rowKeyNullMarker)
			continue
		}
		dst = append(dst, rowKeyValueMarker)
		switch c.kind {
		case rowKeyInt64:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(c.i64[row]))
		case rowKeyInt32:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(int64(c.i32[row])))
		case rowKeyInt16:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(int64(c.i16[row])))
		case rowKeyInt8:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(int64(c.i8[row])))
		case rowKeyFloat64:
			dst = appendFloatKey(dst, c.f64[row])
		case rowKeyFloat32:
			dst = appendFloatKey(dst, float64(c.f32[row]))
		case rowKeyDecimal:
			dst = appendDecimalKey(dst, c.dec[row], c.scale)
		case rowKeyString:
			v := c.data[c.offs[row]:c.offs[row+1]]
			dst = binary.AppendUvarint(dst, uint64(len(v)))
			dst = append(dst, v...)
		case rowKeyBool:
			if c.bln.Value(row) {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		case rowKeyDate32:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(c.date[row]))
		case rowKeyTimestamp:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(c.ts[row]))
		}
	}
	return dst
}

// appendFloatKey encodes f with -0 folded into +0 and every NaN folded into one NaN.
func appendFloatKey(dst []byte, f float64) []byte {
	switch {
	case f == 0:
		f = 0
	case math.IsNaN(f):
		f = math.NaN()
	}
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
}

// appendDecimalKey encodes the decimal value v / 10^scale in a scale-independent form: the sign,
// the exponent left after stripping trailing decimal zeros from the unscaled magnitude, and that
// stripped magnitude. Zero always encodes as sign 0, exponent 0, magnitude 0.
func appendDecimalKey(dst []byte, v decimal128.Num, scale int32) []byte {
	neg := v.Sign() < 0
	if neg {
		v = v.Negate()
	}
	hi, lo := uint64(v.HighBits()), v.LowBits()
	exp := scale
	if hi == 0 && lo == 0 {
		exp = 0
	}
	for hi != 0 || lo != 0 {
		qhi, rhi := hi/10, hi%10
		qlo, r := bits.Div64(rhi, lo, 10)
		if r != 0 {
			break
		}
		hi, lo = qhi, qlo
		exp--
	}
	sign := byte(1)
	switch {
	case hi == 0 && lo == 0:
		sign = 0
	case neg:
		sign = 2
	}
	dst = append(dst, sign, byte(int8(exp)))
	dst = binary.LittleEndian.AppendUint64(dst, hi)
	return binary.LittleEndian.AppendUint64(dst, lo)
}
