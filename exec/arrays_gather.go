package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// gatherRows builds an array of type t whose row i is row i of sources[pick[i]] (NULL when
// pick[i] < 0). Every source has type t and n rows. One source picked everywhere is returned
// as is (retained).
func gatherRows(ctx context.Context, tc *TaskContext, t arrow.DataType, sources []arrow.Array, pick []int32) (arrow.Array, error) {
	n := len(pick)
	if isNullType(t) || len(sources) == 0 {
		return array.MakeArrayOfNull(tc.Alloc, t, n), nil
	}
	same := true
	for _, p := range pick {
		if p != pick[0] {
			same = false
			break
		}
	}
	if same && n > 0 && pick[0] >= 0 {
		sources[pick[0]].Retain()
		return sources[pick[0]], nil
	}
	// Concatenate the sources plus one NULL and take row src*n+i of the result.
	nullElem := array.MakeArrayOfNull(tc.Alloc, t, 1)
	defer nullElem.Release()
	parts := append(append([]arrow.Array{}, sources...), nullElem)
	all, err := array.Concatenate(parts, tc.Alloc)
	if err != nil {
		return nil, errs.Internalf("gathering %s values: %v", t, err)
	}
	defer all.Release()
	idx := make([]int32, n)
	nullAt := int32(len(sources) * n)
	for i, p := range pick {
		if p < 0 {
			idx[i] = nullAt
		} else {
			idx[i] = p*int32(n) + int32(i)
		}
	}
	return takeRows(ctx, tc, all, idx)
}
