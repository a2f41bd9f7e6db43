package exec

import (
	"bytes"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rowKeyOf encodes row of cols with a fresh encoder.
func rowKeyOf(t *testing.T, row int, cols ...arrow.Array) []byte {
	t.Helper()
	e, err := NewRowKeyEncoder(cols)
	if err != nil {
		t.Fatalf("NewRowKeyEncoder: %v", err)
	}
	return e.Append(nil, row)
}

func decimalArray(mem memory.Allocator, scale int32, vals []int64, valid []bool) arrow.Array {
	b := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 20, Scale: scale})
	defer b.Release()
	for i, v := range vals {
		if valid != nil && !valid[i] {
			b.AppendNull()
			continue
		}
		b.Append(decimal128.FromI64(v))
	}
	return b.NewArray()
}

func TestRowKeyEncoderEquality(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)

	ints := func(vals []int64, valid []bool) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.AppendValues(vals, valid)
		return b.NewArray()
	}
	floats := func(vals []float64) arrow.Array {
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		b.AppendValues(vals, nil)
		return b.NewArray()
	}
	strs := func(vals []string, valid []bool) arrow.Array {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		b.AppendValues(vals, valid)
		return b.NewArray()
	}
	bools := func(vals []bool) arrow.Array {
		b := array.NewBooleanBuilder(mem)
		defer b.Release()
		b.AppendValues(vals, nil)
		return b.NewArray()
	}

	tests := []struct {
		name  string
		left  []arrow.Array
		lrow  int
		right []arrow.Array
		rrow  int
		equal bool
	}{
		{"same int", []arrow.Array{ints([]int64{5, 6}, nil)}, 0, []arrow.Array{ints([]int64{7, 5}, nil)}, 1, true},
		{"different int", []arrow.Array{ints([]int64{5}, nil)}, 0, []arrow.Array{ints([]int64{6}, nil)}, 0, false},
		{"null equals null", []arrow.Array{ints([]int64{0, 1}, []bool{false, true})}, 0, []arrow.Array{ints([]int64{0}, []bool{false})}, 0, true},
		{"null differs from zero", []arrow.Array{ints([]int64{0}, []bool{false})}, 0, []arrow.Array{ints([]int64{0}, nil)}, 0, false},
		{"negative zero", []arrow.Array{floats([]float64{math.Copysign(0, -1)})}, 0, []arrow.Array{floats([]float64{0})}, 0, true},
		{"nan", []arrow.Array{floats([]float64{math.NaN()})}, 0, []arrow.Array{floats([]float64{math.Float64frombits(0x7ff8000000000001)})}, 0, true},
		{"decimal scales", []arrow.Array{decimalArray(mem, 1, []int64{10}, nil)}, 0, []arrow.Array{decimalArray(mem, 2, []int64{100}, nil)}, 0, true},
		{"decimal zero scales", []arrow.Array{decimalArray(mem, 0, []int64{0}, nil)}, 0, []arrow.Array{decimalArray(mem, 3, []int64{0}, nil)}, 0, true},
		{"decimal negative", []arrow.Array{decimalArray(mem, 1, []int64{-15}, nil)}, 0, []arrow.Array{decimalArray(mem, 2, []int64{-150}, nil)}, 0, true},
		{"decimal sign", []arrow.Array{decimalArray(mem, 1, []int64{-15}, nil)}, 0, []arrow.Array{decimalArray(mem, 1, []int64{15}, nil)}, 0, false},
		{"decimal 100 vs 1", []arrow.Array{decimalArray(mem, 0, []int64{100}, nil)}, 0, []arrow.Array{decimalArray(mem, 0, []int64{1}, nil)}, 0, false},
		{"strings", []arrow.Array{strs([]string{"ab", "c"}, nil)}, 0, []arrow.Array{strs([]string{"ab"}, nil)}, 0, true},
		{"string boundaries", []arrow.Array{strs([]string{"ab"}, nil), strs([]string{"c"}, nil)}, 0, []arrow.Array{strs([]string{"a"}, nil), strs([]string{"bc"}, nil)}, 0, false},
		{"empty string vs null", []arrow.Array{strs([]string{""}, nil)}, 0, []arrow.Array{strs([]string{""}, []bool{false})}, 0, false},
		{"bools", []arrow.Array{bools([]bool{true, false})}, 1, []arrow.Array{bools([]bool{false})}, 0, true},
		{"two columns", []arrow.Array{ints([]int64{1}, nil), strs([]string{"x"}, nil)}, 0, []arrow.Array{ints([]int64{1}, nil), strs([]string{"x"}, nil)}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				for _, a := range append(tt.left, tt.right...) {
					a.Release()
				}
			}()
			l := rowKeyOf(t, tt.lrow, tt.left...)
			r := rowKeyOf(t, tt.rrow, tt.right...)
			if got := bytes.Equal(l, r); got != tt.equal {
				t.Fatalf("keys %x and %x: equal = %v, want %v", l, r, got, tt.equal)
			}
		})
	}
}

func TestRowKeyEncoderHasNull(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ib := array.NewInt64Builder(mem)
	ib.AppendValues([]int64{1, 0, 3}, []bool{true, false, true})
	ints := ib.NewArray()
	ib.Release()
	defer ints.Release()
	nulls := array.NewNull(3)
	defer nulls.Release()

	e, err := NewRowKeyEncoder([]arrow.Array{ints})
	if err != nil {
		t.Fatal(err)
	}
	for row, want := range []bool{false, true, false} {
		if got := e.HasNull(row); got != want {
			t.Errorf("row %d: HasNull = %v, want %v", row, got, want)
		}
	}
	e2, err := NewRowKeyEncoder([]arrow.Array{ints, nulls})
	if err != nil {
		t.Fatal(err)
	}
	if !e2.HasNull(0) {
		t.Errorf("a null-typed column must make every row null")
	}
}

func TestRowKeyEncoderUnsupportedType(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.LargeBinary)
	b.Append([]byte("x"))
	arr := b.NewArray()
	b.Release()
	defer arr.Release()
	if _, err := NewRowKeyEncoder([]arrow.Array{arr}); err == nil {
		t.Fatal("expected an error for large_binary keys")
	}
}
