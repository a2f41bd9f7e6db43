package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Decimal arithmetic of an expression with a constant must give exactly what the general
// decimal128 kernel gives (rounding, NULLs, sliced input, out-of-range errors), for "+", "-",
// "*", both operand orders and constants of other scales and types.
func TestArithConstMatchesGeneral(t *testing.T) {
	decLit := func(v int64, p, s int32) Expr {
		return NewLiteral(scalar.NewDecimal128Scalar(decimal128.FromI64(v), dec(p, s)))
	}
	cases := []struct {
		name    string
		colType arrow.DataType
		js      string
	}{
		{"decimal(15,2)", dec(15, 2), `["0.04", "0.10", null, "-3.07", "1.00", "0.00", "99999.99", "0.05", "-0.01"]`},
		{"decimal(4,3)", dec(4, 3), `["0.005", "-0.005", "1.234", null, "9.999", "0.000", "0.001"]`},
		{"decimal(38,0) beyond int64", dec(38, 0), `["99999999999999999999999", "1", null, "-5"]`},
		{"decimal(18,0) near the int64 limit", dec(18, 0), `["999999999999999999", "-999999999999999999", "3"]`},
		// Scale 17 times scale 16 rounds the product to scale 30.
		{"decimal(18,17)", dec(18, 17), `["0.12345678901234567", "-0.00000000000000999", null, "0.50000000000000000", "-0.33333333333333333"]`},
	}
	consts := []Expr{lit(int64(1)), lit(int64(-7)), decLit(5, 3, 2), decLit(-125, 5, 3), decLit(3, 1, 0), lit(int64(1000000000000)), decLit(5, 18, 16), decLit(-15, 18, 16)}
	for _, c := range cases {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		full := arr(t, mem, c.colType, c.js)
		sliced := array.NewSlice(full, 2, int64(full.Len()))
		for _, col := range []arrow.Array{full, sliced} {
			schema := arrow.NewSchema([]arrow.Field{{Name: "c", Type: c.colType, Nullable: true}}, nil)
			batch := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
			column := NewColumn(0, "c", c.colType)
			for _, k := range consts {
				for _, op := range []string{"+", "-", "*"} {
					for _, constLeft := range []bool{false, true} {
						args := []Expr{column, k}
						if constLeft {
							args = []Expr{k, column}
						}
						checkArithConst(t, mem, c.name+" "+op, args, op, batch)
					}
				}
			}
			batch.Release()
		}
		sliced.Release()
		full.Release()
		mem.AssertSize(t, 0)
	}
}

// checkArithConst evaluates op(args) specialized and with the general decimal128 kernel (the
// int64 paths off) over batch and compares them.
func checkArithConst(t *testing.T, mem memory.Allocator, name string, args []Expr, op string, batch arrow.RecordBatch) {
	t.Helper()
	e, err := NewCall(op, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	spec, ok := e.(*arithConstExpr)
	if !ok {
		t.Fatalf("%s: NewCall(%s) is %T, want the constant arithmetic", name, e, e)
	}
	got, errGot := evalRender(t, mem, spec, batch)
	int64DecimalPaths = false
	want, errWant := evalRender(t, mem, spec.general, batch)
	int64DecimalPaths = true
	if (errGot != nil) != (errWant != nil) || got != want {
		t.Errorf("%s %s: got %s (%v), general kernel gives %s (%v)", name, e, got, errGot, want, errWant)
	}
}

// Only decimal arithmetic of a non-constant and a non-NULL literal is specialized.
func TestArithConstShapes(t *testing.T) {
	d := NewColumn(0, "d", dec(15, 2))
	cases := []struct {
		name string
		args []Expr
		want bool
	}{
		{"decimal column and integer literal", []Expr{lit(int64(1)), d}, true},
		{"integer column and integer literal", []Expr{NewColumn(1, "i", i64), lit(int64(1))}, false},
		{"decimal column and float literal", []Expr{d, lit(1.5)}, false},
		{"two columns", []Expr{d, d}, false},
		{"NULL literal", []Expr{d, lit(nil)}, false},
	}
	for _, c := range cases {
		e, err := NewCall("-", c.args)
		if err != nil {
			t.Fatal(err)
		}
		if _, got := e.(*arithConstExpr); got != c.want {
			t.Errorf("%s: specialized = %v, want %v", c.name, got, c.want)
		}
	}
}
