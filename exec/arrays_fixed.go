package exec

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// fixedWidth are the result types written straight into a values buffer, without a builder.
type fixedWidth interface {
	int64 | float64 | decimal128.Num
}

// buildFixed is buildRows for fixed-width results: values go straight into a buffer from mem and
// a validity bitmap is allocated only once a NULL appears.
func buildFixed[R fixedWidth](mem memory.Allocator, dt arrow.DataType, n int, f rowFunc[R]) (arrow.Array, error) {
	var zero R
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(n * int(unsafe.Sizeof(zero)))
	var out []R
	if n > 0 {
		out = unsafe.Slice((*R)(unsafe.Pointer(unsafe.SliceData(values.Bytes()))), n)
	}
	var validity *memory.Buffer
	nulls := 0
	for i := 0; i < n; i++ {
		v, ok, err := f(i)
		if err != nil {
			if validity != nil {
				validity.Release()
			}
			return nil, err
		}
		out[i] = v
		if !ok {
			if validity == nil {
				validity = memory.NewResizableBuffer(mem)
				validity.Resize(int(bitutil.BytesForBits(int64(n))))
				bits := validity.Bytes()
				for j := range bits {
					bits[j] = 0
				}
				bitutil.SetBitsTo(bits, 0, int64(i), true)
			}
			nulls++
			out[i] = zero
		} else if validity != nil {
			bitutil.SetBit(validity.Bytes(), i)
		}
	}
	data := array.NewData(dt, n, []*memory.Buffer{validity, values}, nil, nulls, 0)
	defer data.Release()
	if validity != nil {
		validity.Release()
	}
	return array.MakeFromData(data), nil
}
