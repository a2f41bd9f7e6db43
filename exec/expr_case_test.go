package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// testBatch builds a batch with column x (int64) and s (utf8).
func testBatch(t *testing.T, mem memory.Allocator, xs, ss string) arrow.RecordBatch {
	t.Helper()
	x := arr(t, mem, i64, xs)
	defer x.Release()
	s := arr(t, mem, str, ss)
	defer s.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: i64, Nullable: true}, {Name: "s", Type: str, Nullable: true}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{x, s}, int64(x.Len()))
}

func mustCall(t *testing.T, name string, args ...Expr) Expr {
	t.Helper()
	e, err := NewCall(name, args)
	if err != nil {
		t.Fatalf("NewCall(%s): %v", name, err)
	}
	return e
}

func lit(v any) Expr {
	if v == nil {
		return NewLiteral(scalar.MakeNullScalar(arrow.Null))
	}
	return NewLiteral(scalar.MakeScalar(v))
}

func evalRender(t *testing.T, mem memory.Allocator, e Expr, batch arrow.RecordBatch) (string, error) {
	t.Helper()
	out, err := e.Eval(context.Background(), &TaskContext{Alloc: mem}, batch)
	if err != nil {
		return "", err
	}
	defer out.Release()
	if !arrow.TypeEqual(out.DataType(), e.DataType()) {
		t.Fatalf("%s: Eval type %s, DataType %s", e, out.DataType(), e.DataType())
	}
	if out.Len() != int(batch.NumRows()) {
		t.Fatalf("%s: %d rows for a batch of %d", e, out.Len(), batch.NumRows())
	}
	return renderArray(out), nil
}

func TestCase(t *testing.T) {
	x := NewColumn(0, "x", i64)
	s := NewColumn(1, "s", str)
	type tcase struct {
		name    string
		build   func(t *testing.T) (Expr, error)
		want    string
		wantErr bool
	}
	maxInt := lit(int64(9223372036854775807))
	cases := []tcase{
		{name: "searched with else", build: func(t *testing.T) (Expr, error) {
			return NewCase(nil, [][2]Expr{{mustCall(t, ">", x, lit(int64(1))), s}}, lit("small"), str)
		}, want: "small,b,c,small"},
		{name: "no else gives null", build: func(t *testing.T) (Expr, error) {
			return NewCase(nil, [][2]Expr{{mustCall(t, "=", x, lit(int64(2))), lit(int64(20))}}, nil, i64)
		}, want: "NULL,20,NULL,NULL"},
		{name: "simple case, null never matches", build: func(t *testing.T) (Expr, error) {
			return NewCase(x, [][2]Expr{{lit(int64(1)), lit("one")}, {lit(nil), lit("null")}, {lit(int64(3)), lit("three")}}, lit("other"), str)
		}, want: "one,other,three,other"},
		{name: "branches cast to decimal", build: func(t *testing.T) (Expr, error) {
			return NewCase(nil, [][2]Expr{{mustCall(t, "<", x, lit(int64(2))), x}}, NewLiteral(scalar.NewDecimal128Scalar(decimalNum(15), dec(3, 1))), dec(20, 1))
		}, want: "1.0,1.5,1.5,1.5"},
		{name: "lazy: overflow on a row not taken", build: func(t *testing.T) (Expr, error) {
			return NewCase(nil, [][2]Expr{{mustCall(t, "<", x, lit(int64(2))), mustCall(t, "+", maxInt, x)}}, lit(int64(-1)), i64)
		}, wantErr: true},
		{name: "lazy: overflow only where not taken", build: func(t *testing.T) (Expr, error) {
			return NewCase(nil, [][2]Expr{{mustCall(t, ">", x, lit(int64(1))), lit(int64(0))}}, mustCall(t, "+", maxInt, mustCall(t, "-", x, x)), i64)
		}, want: "9223372036854775807,0,0,NULL"},
		{name: "truthy integer condition", build: func(t *testing.T) (Expr, error) {
			return NewCase(nil, [][2]Expr{{mustCall(t, "-", x, lit(int64(2))), lit("nonzero")}}, lit("zero"), str)
		}, want: "nonzero,zero,nonzero,zero"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			batch := testBatch(t, mem, "[1, 2, 3, null]", `["a", "b", "c", null]`)
			defer batch.Release()
			e, err := c.build(t)
			if err != nil {
				t.Fatal(err)
			}
			got, err := evalRender(t, mem, e, batch)
			if c.wantErr {
				// The second row (x=2) takes the ELSE arm; the first overflows in its THEN arm.
				if err == nil {
					t.Fatalf("want overflow error, got %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("%s = %q, want %q", e, got, c.want)
			}
		})
	}
}
