package memory

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Key values are encoded as byte strings to be looked up in hash maps. Within one table every
// key part has a fixed column type, so an encoding only has to be injective per type: fixed
// widths for numbers, a length prefix for variable-width values. Two values encode equally
// exactly when the engine's = finds them equal (strings compare byte-wise, -0.0 equals 0.0).

// partEncoder appends the encoding of one row's value of one key part to buf.
type partEncoder func(buf []byte, row int) []byte

// batchKeys encodes the keys of the rows of one batch.
type batchKeys struct {
	cols  []arrow.Array
	keys  []Key
	parts [][]partEncoder // per key, per part
}

func newBatchKeys(b arrow.RecordBatch, keys []Key) *batchKeys {
	bk := &batchKeys{cols: b.Columns(), keys: keys, parts: make([][]partEncoder, len(keys))}
	for i, k := range keys {
		for _, p := range k.Parts {
			bk.parts[i] = append(bk.parts[i], encoderFor(bk.cols[p.Column], p.Length))
		}
	}
	return bk
}

// encode returns the encoded value of key k in row, and false when one of its parts is NULL
// (a NULL never equals another value, so such a row conflicts with no other).
func (bk *batchKeys) encode(k, row int, buf []byte) ([]byte, bool) {
	buf = buf[:0]
	for i, p := range bk.keys[k].Parts {
		if bk.cols[p.Column].IsNull(row) {
			return buf, false
		}
		buf = bk.parts[k][i](buf, row)
	}
	return buf, true
}

// nullPrimaryColumn returns the index of the first primary key column that is NULL in row, or
// -1 when none is.
func (bk *batchKeys) nullPrimaryColumn(row int) int {
	for _, k := range bk.keys {
		if !k.Primary {
			continue
		}
		for _, p := range k.Parts {
			if bk.cols[p.Column].IsNull(row) {
				return p.Column
			}
		}
	}
	return -1
}

// display renders key k of row as MySQL's duplicate-entry message does: the part values
// joined by '-'.
func (bk *batchKeys) display(k, row int) string {
	var out []byte
	for i, p := range bk.keys[k].Parts {
		if i > 0 {
			out = append(out, '-')
		}
		out = append(out, displayValue(bk.cols[p.Column], row, p.Length)...)
	}
	return string(out)
}

// encoderFor returns the encoder of a's values; length > 0 keeps only that many leading
// characters of a string (bytes of a binary value).
func encoderFor(a arrow.Array, length int) partEncoder {
	switch a := a.(type) {
	case *array.Int64:
		return func(buf []byte, row int) []byte { return binary.BigEndian.AppendUint64(buf, uint64(a.Value(row))) }
	case *array.Int32:
		return func(buf []byte, row int) []byte { return binary.BigEndian.AppendUint32(buf, uint32(a.Value(row))) }
	case *array.Int16:
		return func(buf []byte, row int) []byte { return binary.BigEndian.AppendUint16(buf, uint16(a.Value(row))) }
	case *array.Int8:
		return func(buf []byte, row int) []byte { return append(buf, byte(a.Value(row))) }
	case *array.Uint64:
		return func(buf []byte, row int) []byte { return binary.BigEndian.AppendUint64(buf, a.Value(row)) }
	case *array.Uint32:
		return func(buf []byte, row int) []byte { return binary.BigEndian.AppendUint32(buf, a.Value(row)) }
	case *array.Uint16:
		return func(buf []byte, row int) []byte { return binary.BigEndian.AppendUint16(buf, a.Value(row)) }
	case *array.Uint8:
		return func(buf []byte, row int) []byte { return append(buf, a.Value(row)) }
	case *array.Float64:
		return func(buf []byte, row int) []byte { return appendFloat(buf, a.Value(row)) }
	case *array.Float32:
		return func(buf []byte, row int) []byte { return appendFloat(buf, float64(a.Value(row))) }
	case *array.Decimal128:
		return func(buf []byte, row int) []byte {
			v := a.Value(row)
			buf = binary.BigEndian.AppendUint64(buf, uint64(v.HighBits()))
			return binary.BigEndian.AppendUint64(buf, v.LowBits())
		}
	case *array.Date32:
		return func(buf []byte, row int) []byte { return binary.BigEndian.AppendUint32(buf, uint32(a.Value(row))) }
	case *array.Date64:
		return func(buf []byte, row int) []byte { return binary.BigEndian.AppendUint64(buf, uint64(a.Value(row))) }
	case *array.Timestamp:
		return func(buf []byte, row int) []byte { return binary.BigEndian.AppendUint64(buf, uint64(a.Value(row))) }
	case *array.Boolean:
		return func(buf []byte, row int) []byte {
			if a.Value(row) {
				return append(buf, 1)
			}
			return append(buf, 0)
		}
	case *array.String:
		return func(buf []byte, row int) []byte { return appendBytes(buf, prefixChars(a.Value(row), length)) }
	case *array.LargeString:
		return func(buf []byte, row int) []byte { return appendBytes(buf, prefixChars(a.Value(row), length)) }
	case *array.Binary:
		return func(buf []byte, row int) []byte { return appendBytes(buf, prefixBytes(a.Value(row), length)) }
	case *array.LargeBinary:
		return func(buf []byte, row int) []byte { return appendBytes(buf, prefixBytes(a.Value(row), length)) }
	default:
		// Types memory tables do not normally hold: their text form is exact enough.
		return func(buf []byte, row int) []byte { return appendBytes(buf, a.ValueStr(row)) }
	}
}

// appendFloat encodes f so that -0.0 and 0.0 are one key.
func appendFloat(buf []byte, f float64) []byte {
	if f == 0 {
		f = 0
	}
	return binary.BigEndian.AppendUint64(buf, math.Float64bits(f))
}

// appendBytes appends a length-prefixed value, so that consecutive parts cannot run together.
func appendBytes[T string | []byte](buf []byte, v T) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(v)))
	return append(buf, v...)
}

// prefixChars keeps the first n characters of s (all of it when n is 0).
func prefixChars(s string, n int) string {
	if n <= 0 {
		return s
	}
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

func prefixBytes(b []byte, n int) []byte {
	if n <= 0 || n >= len(b) {
		return b
	}
	return b[:n]
}

// displayValue renders one non-NULL key value the way MySQL prints it in errors.
func displayValue(a arrow.Array, row, length int) string {
	switch a := a.(type) {
	case *array.String:
		return prefixChars(a.Value(row), length)
	case *array.LargeString:
		return prefixChars(a.Value(row), length)
	case *array.Float64:
		return strconv.FormatFloat(a.Value(row), 'g', -1, 64)
	case *array.Decimal128:
		return a.Value(row).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Date32:
		return a.Value(row).ToTime().Format(time.DateOnly)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(row).ToTime(unit).UTC().Format("2006-01-02 15:04:05.999999")
	case *array.Boolean:
		if a.Value(row) {
			return "1"
		}
		return "0"
	}
	return a.ValueStr(row)
}
