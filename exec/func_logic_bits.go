package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bitmapLogic computes AND or OR of two boolean arrays of n rows under Kleene logic a byte (eight
// rows) at a time, which is what range conditions such as x > 1 AND x < 9 need in a WHERE. It
// gives the same values and NULLs as the row-by-row kernel:
//
//	AND: FALSE when either side is FALSE, else NULL when either is NULL, else TRUE;
//	OR:  TRUE when either side is TRUE, else NULL when either is NULL, else FALSE.
func bitmapLogic(mem memory.Allocator, and bool, a, b *array.Boolean) arrow.Array {
	n := a.Len()
	nbytes := int(bitutil.BytesForBits(int64(n)))
	av, aok := alignedBits(a.Data(), 1, n)
	bv, bok := alignedBits(b.Data(), 1, n)
	var aValid, bValid []byte
	if a.NullN() > 0 && aok {
		aValid, aok = alignedBits(a.Data(), 0, n)
	}
	if b.NullN() > 0 && bok {
		bValid, bok = alignedBits(b.Data(), 0, n)
	}
	if !aok || !bok {
		return nil
	}
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(nbytes)
	out := values.Bytes()
	var validity *memory.Buffer
	var valid []byte
	if aValid != nil || bValid != nil {
		validity = memory.NewResizableBuffer(mem)
		defer validity.Release()
		validity.Resize(nbytes)
		valid = validity.Bytes()
	}
	for i := 0; i < nbytes; i++ {
		x, y := av[i], bv[i]
		xk, yk := byte(0xFF), byte(0xFF) // known (non-NULL) rows
		if aValid != nil {
			xk = aValid[i]
		}
		if bValid != nil {
			yk = bValid[i]
		}
		x, y = x&xk, y&yk // value bits of NULL rows are unspecified: clear them
		if and {
			out[i] = x & y
			if valid != nil {
				valid[i] = (xk & yk) | (xk &^ x) | (yk &^ y) // both known, or one known FALSE
			}
		} else {
			out[i] = x | y
			if valid != nil {
				valid[i] = (xk & yk) | x | y // both known, or one known TRUE
			}
		}
	}
	nulls := 0
	if valid != nil {
		nulls = n - bitutil.CountSetBits(valid, 0, n)
		if nulls == 0 {
			validity = nil
		}
	}
	data := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{validity, values}, nil, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// alignedBits returns buffer i of a boolean array's data as bytes whose bit 0 is row 0, or false
// when the array starts inside a byte or lacks the buffer (then the caller takes the row path).
func alignedBits(d arrow.ArrayData, i, n int) ([]byte, bool) {
	buf := d.Buffers()[i]
	if d.Offset()%8 != 0 || buf == nil {
		return nil, false
	}
	start := d.Offset() / 8
	b := buf.Bytes()
	end := start + int(bitutil.BytesForBits(int64(n)))
	if end > len(b) {
		return nil, false
	}
	return b[start:end], true
}
