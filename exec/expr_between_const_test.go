package exec

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// BETWEEN of a column and two literals, specialized to two bit-kernel comparisons, gives
// exactly what the general BETWEEN kernel gives: every type the bit kernels compare, bounds of
// other types, empty and inverted ranges, with and without NULLs, sliced input.
func TestBetweenConstMatchesGeneral(t *testing.T) {
	date32 := arrow.FixedWidthTypes.Date32
	decLit := func(v int64) Expr { return NewLiteral(scalar.NewDecimal128Scalar(decimal128.FromI64(v), dec(10, 2))) }
	cases := []struct {
		name    string
		colType arrow.DataType
		js      string
		bounds  [][2]Expr
	}{
		{"int64", i64, `[5, -3, null, 7, 0, 12, 7, null, 100, -100, 6, 7, 8, 9, 10, 11, 12, 13, 7]`,
			[][2]Expr{{lit(int64(0)), lit(int64(7))}, {lit(int64(7)), lit(int64(7))}, {lit(int64(9)), lit(int64(1))}, {lit(2.5), lit(10.0)}, {decLit(250), decLit(1000)}}},
		{"int64 without NULLs", i64, `[5, -3, 7, 0, 12, 7, 100, -100, 6, 7, 8, 9, 10, 11, 12, 13, 7]`,
			[][2]Expr{{lit(int64(0)), lit(int64(7))}, {lit(int64(9)), lit(int64(1))}}},
		{"float64", f64, `[1.5, -0.0, 0.0, null, 2.5, 1e300, -1e300, 3, 2.5, 2.4999, 7, 8, 9, 10]`,
			[][2]Expr{{lit(0.0), lit(2.5)}, {lit(int64(-1)), lit(int64(3))}, {lit(math.Inf(-1)), lit(0.0)}, {lit(math.NaN()), lit(1.0)}}},
		{"decimal", dec(10, 2), `["1.50", "2.50", null, "-3.00", "2.49", "2.51", "0.00", "2.50", "9.99"]`,
			[][2]Expr{{decLit(150), decLit(250)}, {lit(int64(0)), lit(int64(2))}, {lit(0.05), lit(2.5)}}},
		{"string", str, `["b", "a", null, "", "ba", "b", "c", "abc", "B", "b", "zz"]`,
			[][2]Expr{{lit("a"), lit("b")}, {lit(""), lit("bz")}}},
		{"date32", date32, `["2020-01-02", null, "2019-12-31", "2020-01-02", "2021-06-30", "1970-01-01", "2020-01-03", "2020-01-01", "2020-01-02"]`,
			[][2]Expr{{lit("2020-01-01"), lit("2020-01-02")}, {lit("2019-01-01"), lit("2021-12-31")}}},
	}
	for _, c := range cases {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		full := arr(t, mem, c.colType, c.js)
		sliced := array.NewSlice(full, 3, int64(full.Len()))
		for _, col := range []arrow.Array{full, sliced} {
			schema := arrow.NewSchema([]arrow.Field{{Name: "c", Type: c.colType, Nullable: true}}, nil)
			batch := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
			for _, b := range c.bounds {
				e, err := NewCall("between", []Expr{NewColumn(0, "c", c.colType), b[0], b[1]})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				spec, ok := e.(*betweenConstExpr)
				if !ok {
					t.Fatalf("%s: NewCall(%s) is %T, want the specialized BETWEEN", c.name, e, e)
				}
				checkSpecialized(t, mem, c.name, spec, spec.general, batch)
			}
			batch.Release()
		}
		sliced.Release()
		full.Release()
		mem.AssertSize(t, 0)
	}
}

// NaN sorts below every number for the comparison kernels; the specialized BETWEEN agrees.
func TestBetweenConstNaN(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	batch := floatsWithNaN(mem)
	defer batch.Release()
	for _, bounds := range [][2]float64{{-5, 1}, {math.Inf(-1), 0}, {0, math.Inf(1)}, {2, -2}} {
		e, err := NewCall("between", []Expr{NewColumn(0, "v", f64), lit(bounds[0]), lit(bounds[1])})
		if err != nil {
			t.Fatal(err)
		}
		spec, ok := e.(*betweenConstExpr)
		if !ok {
			t.Fatalf("NewCall(%s) is %T, want the specialized BETWEEN", e, e)
		}
		checkSpecialized(t, mem, "nan", spec, spec.general, batch)
	}
}

// Only a column between two non-NULL literals is specialized.
func TestBetweenConstShapes(t *testing.T) {
	x, y := NewColumn(0, "x", i64), NewColumn(1, "y", i64)
	plus, err := NewCall("+", []Expr{x, lit(int64(1))})
	if err != nil {
		t.Fatal(err)
	}
	null := NewLiteral(scalar.MakeNullScalar(i64))
	for _, args := range [][]Expr{
		{x, y, lit(int64(5))},
		{x, lit(int64(1)), y},
		{plus, lit(int64(1)), lit(int64(5))},
		{x, null, lit(int64(5))},
		{lit(int64(3)), lit(int64(1)), lit(int64(5))},
	} {
		e, err := NewCall("between", args)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := e.(*betweenConstExpr); ok {
			t.Errorf("%s was specialized", e)
		}
	}
}
