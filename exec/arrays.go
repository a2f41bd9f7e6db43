package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	computeexec "github.com/apache/arrow-go/v18/arrow/compute/exec"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/internal/errs"
)

// ScalarAt returns element i of a as a scalar (a null scalar of a's type when the element is
// NULL). It returns an InvalidInput error when i is out of range.
func ScalarAt(a arrow.Array, i int) (scalar.Scalar, error) {
	if i < 0 || i >= a.Len() {
		return nil, errs.Invalidf("row %d is out of range for an array of %d rows", i, a.Len())
	}
	s, err := scalar.GetScalar(a, i)
	if err != nil {
		return nil, errs.Internalf("reading row %d of a %s array: %v", i, a.DataType(), err)
	}
	return s, nil
}

// BroadcastScalar returns an array of n copies of s (n NULLs of s's type when s is null), built
// from mem. The caller releases it. n copies of a string longer than maxBatchStringBytes in all
// are refused with a ResourceExhausted error before anything is allocated.
func BroadcastScalar(mem memory.Allocator, s scalar.Scalar, n int) (arrow.Array, error) {
	if !s.IsValid() || s.DataType().ID() == arrow.NULL {
		return array.MakeArrayOfNull(mem, s.DataType(), n), nil
	}
	if b, ok := s.(scalar.BinaryScalar); ok && n > 0 && int64(len(b.Data())) > maxBatchStringBytes/int64(n) {
		// A folded constant such as REPEAT('x', 1000000) is broadcast here, not by its function.
		return nil, errs.Exhaustedf("a constant value of %d bytes on each of %d rows would pass %d bytes for one batch of rows, the limit of one expression per batch; ask for fewer or shorter values", len(b.Data()), n, maxBatchStringBytes)
	}
	a, err := scalar.MakeArrayFromScalar(s, n, mem)
	if err != nil {
		return nil, errs.Internalf("broadcasting a %s value: %v", s.DataType(), err)
	}
	return a, nil
}

// computeCtx attaches the task's allocator to ctx for arrow compute functions.
func computeCtx(ctx context.Context, tc *TaskContext) context.Context {
	return computeexec.WithAllocator(ctx, tc.Alloc)
}

// releaseArrays releases every non-nil array.
func releaseArrays(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}

// int64Values, float64Values and decimalValues expose the value buffers of canonical arrays;
// they are only called on arrays already cast to the matching type.
func int64Values(a arrow.Array) []int64 { return a.(*array.Int64).Int64Values() }

func float64Values(a arrow.Array) []float64 { return a.(*array.Float64).Float64Values() }

func decimalValues(a arrow.Array) []decimal128.Num { return a.(*array.Decimal128).Values() }

// validAt reports whether element i of a is not NULL (a null-typed array is all NULL).
func validAt(a arrow.Array, i int) bool {
	return a.DataType().ID() != arrow.NULL && a.IsValid(i)
}

// allValid reports whether element i of every array is non-NULL.
func allValid(args []arrow.Array, i int) bool {
	for _, a := range args {
		if !validAt(a, i) {
			return false
		}
	}
	return true
}
