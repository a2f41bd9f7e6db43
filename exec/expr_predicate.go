package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
	out := newBoolBuilder(tc.Alloc)
	defer out.Release()
	n := b.Len()
	out.Reserve(n)
	for i := 0; i < n; i++ {
		out.UnsafeAppend(b.IsValid(i) && b.Value(i))
	}
	return out.NewBooleanArray(), nil
}
