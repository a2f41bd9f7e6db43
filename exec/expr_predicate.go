package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// PredicateToFilter turns the value of a WHERE / HAVING / ON condition into a boolean array with
// no NULLs, usable with compute.Filter: a row is kept when the value is true to MySQL (a non-zero
// number, a string whose leading number is non-zero, TRUE); NULL and false drop it. The caller
// releases the result.
func PredicateToFilter(ctx context.Context, tc *TaskContext, a arrow.Array) (*array.Boolean, error) {
	var b *array.Boolean
	if a.DataType().ID() == arrow.BOOL {
		a.Retain()
		b = a.(*array.Boolean)
	} else {
		c, err := CastArray(ctx, tc, a, arrow.FixedWidthTypes.Boolean)
		if err != nil {
			return nil, err
		}
		b = c.(*array.Boolean)
	}
	if b.NullN() == 0 {
		return b, nil
	}
	defer b.Release()
	// Kept rows are TRUE and valid: AND the value bits with the validity bits, a word at a time.
	bitmap, offset := maskBitmap(b)
	n := b.Len()
	if bitmap == nil || b.NullN() == n {
		return constantBoolArray(tc.Alloc, n, false).(*array.Boolean), nil
	}
	values := bitutil.BitmapAndAlloc(tc.Alloc, bitmap, b.NullBitmapBytes(), int64(offset), int64(offset), int64(n), 0)
	defer values.Release()
	data := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{nil, values}, nil, 0, 0)
	defer data.Release()
	return array.NewBooleanData(data), nil
}
