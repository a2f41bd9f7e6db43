package slt

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// oneValue builds a single-value array of type dt holding v (nil for NULL).
func oneValue(t *testing.T, mem memory.Allocator, dt arrow.DataType, v any) arrow.Array {
	t.Helper()
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	if v == nil {
		b.AppendNull()
		return b.NewArray()
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Uint64Builder:
		b.Append(v.(uint64))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.Decimal128Builder:
		b.Append(decimal128.FromI64(v.(int64)))
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.(int32)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.(int64)))
	default:
		t.Fatalf("no builder case for %T", b)
	}
	return b.NewArray()
}

func TestFormatValue(t *testing.T) {
	dec := func(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	tests := []struct {
		name string
		dt   arrow.DataType
		v    any
		typ  byte
		want string
	}{
		{"null int", arrow.PrimitiveTypes.Int64, nil, 'I', "NULL"},
		{"null text", arrow.BinaryTypes.String, nil, 'T', "NULL"},
		{"int in I", arrow.PrimitiveTypes.Int64, int64(-42), 'I', "-42"},
		{"int32 in I", arrow.PrimitiveTypes.Int32, int32(7), 'I', "7"},
		{"uint in I", arrow.PrimitiveTypes.Uint64, uint64(18446744073709551615), 'I', "18446744073709551615"},
		{"bool in I", arrow.FixedWidthTypes.Boolean, true, 'I', "1"},
		{"decimal scale 4 in I", dec(10, 4), int64(1120000), 'I', "112.000"},
		{"fractional decimal in I", dec(10, 4), int64(1274000), 'I', "127.400"},
		{"negative decimal in I", dec(10, 4), int64(-3333), 'I', "-0.333"},
		{"decimal scale 0 in I", dec(38, 0), int64(130), 'I', "130"},
		{"float in I", arrow.PrimitiveTypes.Float64, 2.5, 'I', "2.500"},
		{"numeric string in I", arrow.BinaryTypes.String, "12abc", 'I', "12"},
		{"non-numeric string in I", arrow.BinaryTypes.String, "abc", 'I', "0"},
		{"int in R", arrow.PrimitiveTypes.Int64, int64(3), 'R', "3.000"},
		{"float in R", arrow.PrimitiveTypes.Float64, 1.0 / 3, 'R', "0.333"},
		{"negative float in R", arrow.PrimitiveTypes.Float64, -2.0005, 'R', "-2.001"},
		{"decimal in R", dec(10, 4), int64(1274000), 'R', "127.400"},
		{"text", arrow.BinaryTypes.String, "hello world", 'T', "hello world"},
		{"empty string", arrow.BinaryTypes.String, "", 'T', "(empty)"},
		{"empty string in I", arrow.BinaryTypes.String, "", 'I', "0"},
		{"control characters", arrow.BinaryTypes.String, "a\tb\u00e9", 'T', "a@b@@"},
		{"int in T", arrow.PrimitiveTypes.Int64, int64(-5), 'T', "-5"},
		{"bool in T", arrow.FixedWidthTypes.Boolean, false, 'T', "0"},
		{"decimal in T keeps scale", dec(10, 4), int64(1120000), 'T', "112.0000"},
		{"small decimal in T", dec(10, 4), int64(-5), 'T', "-0.0005"},
		{"float in T", arrow.PrimitiveTypes.Float64, 0.1, 'T', "0.1"},
		{"integral float in T", arrow.PrimitiveTypes.Float64, 100.0, 'T', "100"},
		{"huge float in T", arrow.PrimitiveTypes.Float64, 1e20, 'T', "1e20"},
		{"date in T", arrow.FixedWidthTypes.Date32, int32(19000), 'T', "2022-01-08"},
		{"timestamp in T", &arrow.TimestampType{Unit: arrow.Microsecond}, int64(1_000_000_500_000), 'T', "1970-01-12 13:46:40.500000"},
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arr := oneValue(t, mem, tt.dt, tt.v)
			defer arr.Release()
			got, err := FormatValue(arr, 0, tt.typ)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("FormatValue(%v as %c) = %q, want %q", tt.v, tt.typ, got, tt.want)
			}
		})
	}
}

func TestFormatValueUnsupportedType(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
	defer b.Release()
	b.Append(true)
	arr := b.NewArray()
	defer arr.Release()
	if _, err := FormatValue(arr, 0, 'T'); err == nil {
		t.Fatal("formatting a list succeeded, want an unsupported-type error")
	}
}

func TestNumericPrefix(t *testing.T) {
	tests := map[string]string{
		"":        "0",
		"abc":     "0",
		"12abc":   "12",
		" -3.5x":  "-3.5",
		"1e3z":    "1e3",
		"1e":      "1",
		".5":      ".5",
		"+7":      "+7",
		"-":       "0",
		"12.":     "12.",
		"4.2e-1q": "4.2e-1",
	}
	for in, want := range tests {
		if got := numericPrefix(in); got != want {
			t.Errorf("numericPrefix(%q) = %q, want %q", in, got, want)
		}
	}
}
