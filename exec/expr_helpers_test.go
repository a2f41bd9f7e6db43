package exec

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Test helpers shared by the expression and function tests.

var (
	i64  = arrow.PrimitiveTypes.Int64
	f64  = arrow.PrimitiveTypes.Float64
	str  = arrow.BinaryTypes.String
	bln  = arrow.FixedWidthTypes.Boolean
	null = arrow.Null
)

func dec(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }

// arr builds an array of type t from JSON (decimals as strings, e.g. ["1.50", null]).
func arr(t *testing.T, mem memory.Allocator, dt arrow.DataType, js string) arrow.Array {
	t.Helper()
	if dt.ID() == arrow.NULL {
		var n int
		if js != "[]" {
			n = strings.Count(js, ",") + 1
		}
		return array.MakeArrayOfNull(mem, dt, n)
	}
	a, _, err := array.FromJSON(mem, dt, strings.NewReader(js))
	if err != nil {
		t.Fatalf("building %s array from %s: %v", dt, js, err)
	}
	return a
}

// arg is one argument of a function test: a type and its JSON values.
type arg struct {
	t  arrow.DataType
	js string
}

// callFunc resolves name for the argument types and runs its kernel; it returns the result type,
// the result rendered by renderArray, and the error.
func callFunc(t *testing.T, mem memory.Allocator, name string, args ...arg) (arrow.DataType, string, error) {
	t.Helper()
	types := make([]arrow.DataType, len(args))
	vals := make([]arrow.Array, len(args))
	n := 0
	for i, a := range args {
		types[i] = a.t
		vals[i] = arr(t, mem, a.t, a.js)
		n = vals[i].Len()
	}
	defer releaseArrays(vals)
	k, rt, err := ResolveScalar(name, types)
	if err != nil {
		return nil, "", err
	}
	tc := &TaskContext{Alloc: mem}
	out, err := k(context.Background(), tc, vals, n)
	if err != nil {
		return rt, "", err
	}
	defer out.Release()
	if out.Len() != n {
		t.Fatalf("%s returned %d rows for %d", name, out.Len(), n)
	}
	if !arrow.TypeEqual(out.DataType(), rt) {
		t.Fatalf("%s returned type %s, resolved %s", name, out.DataType(), rt)
	}
	return rt, renderArray(out), nil
}

// renderArray prints values as MySQL text (NULL for nulls), comma separated.
func renderArray(a arrow.Array) string {
	mem := memory.NewGoAllocator()
	tc := &TaskContext{Alloc: mem}
	s, err := CastArray(context.Background(), tc, a, str)
	if err != nil {
		return "error: " + err.Error()
	}
	defer s.Release()
	sa := s.(*array.String)
	parts := make([]string, sa.Len())
	for i := range parts {
		if sa.IsNull(i) {
			parts[i] = "NULL"
		} else {
			parts[i] = sa.Value(i)
		}
	}
	return strings.Join(parts, ",")
}

func newMem(t *testing.T) *memory.CheckedAllocator {
	return memory.NewCheckedAllocator(memory.NewGoAllocator())
}

func decimalNum(v int64) decimal128.Num { return decimal128.FromI64(v) }

func arrowList() arrow.DataType { return arrow.ListOf(i64) }
