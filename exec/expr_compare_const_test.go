package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// The specialized column-versus-constant comparison must give exactly what the general
// comparison kernel gives, for every operator, both operand orders, NULLs and sliced input.
func TestCompareConstMatchesGeneral(t *testing.T) {
	date32 := arrow.FixedWidthTypes.Date32
	ts := &arrow.TimestampType{Unit: arrow.Microsecond}
	decLit := scalar.NewDecimal128Scalar(decimal128.FromI64(250), dec(10, 2))
	cases := []struct {
		name    string
		colType arrow.DataType
		js      string
		consts  []Expr
	}{
		{"int64", i64, `[5, -3, null, 7, 0, 12, 7, null, 100, -100, 6, 7, 8, 9, 10, 11, 12, 13, 7]`,
			[]Expr{lit(int64(7)), lit(int64(-1000)), lit(2.5), lit("7"), NewLiteral(decLit)}},
		{"float64", f64, `[1.5, -0.0, 0.0, null, 2.5, 1e300, -1e300, 3, 2.5, 2.4999, 7, 8, 9, 10]`,
			[]Expr{lit(2.5), lit(0.0), lit(int64(3)), lit("2.5abc")}},
		{"decimal", dec(10, 2), `["1.50", "2.50", null, "-3.00", "2.49", "2.51", "0.00", "2.50", "9.99"]`,
			[]Expr{NewLiteral(decLit), lit(int64(2)), lit(2.5)}},
		{"string", str, `["b", "a", null, "", "ba", "b", "c", "abc", "B", "b", "zz"]`,
			[]Expr{lit("b"), lit(""), lit(int64(0))}},
		{"date32", date32, `["2020-01-02", null, "2019-12-31", "2020-01-02", "2021-06-30", "1970-01-01", "2020-01-03", "2020-01-01", "2020-01-02"]`,
			[]Expr{lit("2020-01-02")}},
		{"timestamp", ts, `["2020-01-02 00:00:00", null, "2020-01-02 00:00:01", "2019-01-01 10:00:00", "2020-01-02 00:00:00", "2030-01-01 00:00:00", "1999-01-01 00:00:00", "2020-01-01 23:59:59", "2020-01-02 00:00:00"]`,
			[]Expr{lit("2020-01-02 00:00:00")}},
	}
	ops := []string{"=", "<>", "<", "<=", ">", ">=", "<=>"}
	for _, c := range cases {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		full := arr(t, mem, c.colType, c.js)
		sliced := array.NewSlice(full, 3, int64(full.Len()))
		for _, col := range []arrow.Array{full, sliced} {
			schema := arrow.NewSchema([]arrow.Field{{Name: "c", Type: c.colType, Nullable: true}}, nil)
			batch := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
			column := NewColumn(0, "c", c.colType)
			for _, k := range c.consts {
				for _, op := range ops {
					for _, constLeft := range []bool{false, true} {
						args := []Expr{column, k}
						if constLeft {
							args = []Expr{k, column}
						}
						checkCompareConst(t, mem, c.name+" "+op, args, op, batch)
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

// checkCompareConst evaluates op(args) specialized and general over batch and compares them.
func checkCompareConst(t *testing.T, mem memory.Allocator, name string, args []Expr, op string, batch arrow.RecordBatch) {
	t.Helper()
	e, err := NewCall(op, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	spec, ok := e.(*compareConstExpr)
	if !ok {
		t.Fatalf("%s: NewCall(%s) is %T, want the constant comparison", name, e, e)
	}
	checkSpecialized(t, mem, name, spec, spec.general, batch)
}

// NaN is below every number for the comparison kernels (cmp.Compare); the bit kernels agree.
func TestCompareConstNaN(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	batch := floatsWithNaN(mem)
	defer batch.Release()
	for _, op := range []string{"=", "<>", "<", "<=", ">", ">=", "<=>"} {
		for _, k := range []float64{1, 0, -5} {
			checkCompareConst(t, mem, "nan "+op, []Expr{NewColumn(0, "v", f64), lit(k)}, op, batch)
			checkCompareConst(t, mem, "nan "+op, []Expr{lit(k), NewColumn(0, "v", f64)}, op, batch)
		}
	}
}

// Only a column against a non-NULL literal is specialized.
func TestCompareConstShapes(t *testing.T) {
	x := NewColumn(0, "x", i64)
	cases := []struct {
		name string
		args []Expr
		want bool
	}{
		{"column and literal", []Expr{x, lit(int64(1))}, true},
		{"literal and column", []Expr{lit(int64(1)), x}, true},
		{"two columns", []Expr{x, x}, false},
		{"two literals", []Expr{lit(int64(1)), lit(int64(2))}, false},
		{"NULL literal", []Expr{x, lit(nil)}, false},
		{"boolean comparison", []Expr{NewColumn(1, "b", bln), lit(true)}, false},
	}
	for _, c := range cases {
		e, err := NewCall("<", c.args)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, got := e.(*compareConstExpr); got != c.want {
			t.Errorf("%s: specialized = %v, want %v", c.name, got, c.want)
		}
		if e.String() != "("+c.args[0].String()+" < "+c.args[1].String()+")" {
			t.Errorf("%s: String() = %s", c.name, e)
		}
	}
}

func TestCompareOrderedBitsLengths(t *testing.T) {
	for n := 0; n <= 70; n++ {
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = int64(i % 5)
		}
		out := make([]byte, (n+7)/8)
		for _, op := range []constCmp{constEQ, constNE, constLT, constLE, constGT, constGE} {
			compareOrderedBits(vals, 2, op, out)
			for i, v := range vals {
				r := 0
				if v < 2 {
					r = -1
				} else if v > 2 {
					r = 1
				}
				got := out[i/8]&(1<<(i%8)) != 0
				if got != op.outcome(r) {
					t.Fatalf("n=%d op=%d row %d (%d): got %v", n, op, i, v, got)
				}
			}
		}
	}
}

// An empty batch goes through the general kernel and yields an empty result.
func TestCompareConstEmptyBatch(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: i64, Nullable: true}}, nil)
	col := arr(t, mem, i64, `[]`)
	defer col.Release()
	batch := array.NewRecordBatch(schema, []arrow.Array{col}, 0)
	defer batch.Release()
	e, err := NewCall(">", []Expr{NewColumn(0, "x", i64), lit(int64(1))})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Eval(context.Background(), &TaskContext{Alloc: mem}, batch)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if out.Len() != 0 {
		t.Fatalf("got %d rows", out.Len())
	}
}
