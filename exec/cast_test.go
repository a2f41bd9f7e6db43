package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestCastArray(t *testing.T) {
	cases := []struct {
		from arrow.DataType
		js   string
		to   arrow.DataType
		want string
	}{
		{f64, "[1.5, -1.5, 2.4, null]", i64, "2,-2,2,NULL"},
		{f64, "[2.5, -2.5, 3.5, 0.5]", i64, "2,-2,4,0"},
		{dec(4, 2), `["1.50", "-2.50", "0.49"]`, i64, "2,-3,0"},
		{str, `["12abc", " -7", "abc", "1.9", "99999999999999999999"]`, i64, "12,-7,0,1,9223372036854775807"},
		{bln, "[true, false]", i64, "1,0"},
		{f64, "[1e20, 1e30]", i64, "9223372036854775807,9223372036854775807"},
		{str, `["1.5e3x", "", ".5", "-"]`, f64, "1500,0,0.5,0"},
		{dec(5, 3), `["1.125"]`, f64, "1.125"},
		{i64, "[12, -3]", dec(10, 0), "12,-3"},
		{i64, "[12345]", dec(3, 1), "99.9"},
		{f64, "[0.125, 2.5, -2.5]", dec(10, 2), "0.13,2.50,-2.50"},
		{f64, "[2.5, -2.5]", dec(10, 0), "3,-3"},
		{dec(6, 3), `["1.235", "-1.235"]`, dec(5, 2), "1.24,-1.24"},
		{str, `["3.14159", "abc", "-0.005"]`, dec(6, 2), "3.14,0.00,-0.01"},
		{dec(6, 3), `["1.500"]`, str, "1.500"},
		{f64, "[0.1, 1e20, 1.5e-7, 123456, 1e15, 100000000000000]", str, "0.1,1e20,1.5e-7,123456,1e15,100000000000000"},
		{bln, "[true, false, null]", str, "1,0,NULL"},
		{i64, "[0, 3, null]", bln, "0,1,NULL"},
		{str, `["0.0", "0.1", "x"]`, bln, "0,1,0"},
		{null, "[null, null]", i64, "NULL,NULL"},
		{arrow.PrimitiveTypes.Int32, "[5]", f64, "5"},
	}
	for _, c := range cases {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		a := arr(t, mem, c.from, c.js)
		out, err := CastArray(context.Background(), &TaskContext{Alloc: mem}, a, c.to)
		if err != nil {
			t.Errorf("CAST(%s %s AS %s): %v", c.from, c.js, c.to, err)
		} else {
			if !arrow.TypeEqual(out.DataType(), c.to) {
				t.Errorf("CAST(%s AS %s) returned %s", c.from, c.to, out.DataType())
			}
			if got := renderArray(out); got != c.want {
				t.Errorf("CAST(%s %s AS %s) = %q, want %q", c.from, c.js, c.to, got, c.want)
			}
			out.Release()
		}
		a.Release()
		mem.AssertSize(t, 0)
	}
}

func TestNewCastRejectsImpossibleCasts(t *testing.T) {
	// MySQL converts dates to numbers (CAST(DATE '2020-01-02' AS SIGNED) = 20200102).
	col := NewColumn(0, "d", arrow.FixedWidthTypes.Date32)
	if _, err := NewCast(col, i64); err != nil {
		t.Errorf("CAST(date AS SIGNED): %v", err)
	}
	list := NewColumn(0, "l", arrow.ListOf(i64))
	if _, err := NewCast(list, str); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("CAST(list AS CHAR): want InvalidInput, got %v", err)
	}
	if _, err := NewCast(NewColumn(0, "s", str), dec(10, 0)); err != nil {
		t.Errorf("CAST(string AS DECIMAL): %v", err)
	}
}

func TestCastTemporal(t *testing.T) {
	date, ts := arrow.FixedWidthTypes.Date32, &arrow.TimestampType{Unit: arrow.Microsecond}
	tm := arrow.FixedWidthTypes.Time64us
	cases := []struct {
		from arrow.DataType
		js   string
		to   arrow.DataType
		want string
	}{
		{str, `["2024-01-02", "2024-01-02 10:00:00", "nope", null]`, date, "2024-01-02,2024-01-02,NULL,NULL"},
		{str, `["2024-01-02 03:04:05", "2024-01-02", "2024-01-02 03:04:05.25", "x"]`, ts, "2024-01-02 03:04:05,2024-01-02 00:00:00,2024-01-02 03:04:05.250000,NULL"},
		{date, "[19724]", str, "2024-01-02"},
		{str, `["12:00:00", "23:59:59.5", "07:30", "25:00:00", "12:61:00", null]`, tm, "12:00:00,23:59:59.500000,07:30:00,25:00:00,NULL,NULL"},
		{str, `["2020-1-2", "20200102", "200102", "2020-01-02 10:00", "2020-02-30", "2020-13-01"]`, date, "2020-01-02,2020-01-02,2020-01-02,2020-01-02,NULL,NULL"},
		{date, "[19724, null]", i64, "20240102,NULL"},
		{i64, "[20240102, 240102, 0]", date, "2024-01-02,2024-01-02,NULL"},
		{ts, "[1704164645500000]", arrow.PrimitiveTypes.Float64, "20240102030405.5"},
		{tm, "[-5400000000]", i64, "-13000"},
		{arrow.Null, "[null]", date, "NULL"},
		{tm, "[43200000000, 1]", str, "12:00:00,00:00:00.000001"},
	}
	for _, c := range cases {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		a := arr(t, mem, c.from, c.js)
		out, err := CastArray(context.Background(), &TaskContext{Alloc: mem}, a, c.to)
		if err != nil {
			t.Errorf("CAST(%s %s AS %s): %v", c.from, c.js, c.to, err)
		} else {
			if got := renderArray(out); got != c.want {
				t.Errorf("CAST(%s %s AS %s) = %q, want %q", c.from, c.js, c.to, got, c.want)
			}
			out.Release()
		}
		a.Release()
		mem.AssertSize(t, 0)
	}
}
