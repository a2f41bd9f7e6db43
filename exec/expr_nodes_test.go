package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestExprNodes(t *testing.T) {
	outerBatchMem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer outerBatchMem.AssertSize(t, 0)
	outer := testBatch(t, outerBatchMem, "[10, 20]", `["p", "q"]`)
	defer outer.Release()
	grand := testBatch(t, outerBatchMem, "[7]", `["g"]`)
	defer grand.Release()

	cases := []struct {
		name    string
		e       func(t *testing.T) (Expr, error)
		params  []scalar.Scalar
		outer   bool
		want    string
		wantStr string
		errCat  *errs.Category
	}{
		{name: "column", e: func(*testing.T) (Expr, error) { return NewColumn(1, "s", str), nil }, want: "a,NULL,c", wantStr: "s"},
		{name: "literal", e: func(*testing.T) (Expr, error) { return lit(int64(4)), nil }, want: "4,4,4", wantStr: "4"},
		{name: "string literal", e: func(*testing.T) (Expr, error) { return lit("it's"), nil }, want: "it's,it's,it's", wantStr: "'it''s'"},
		{name: "null literal", e: func(*testing.T) (Expr, error) { return lit(nil), nil }, want: "NULL,NULL,NULL", wantStr: "NULL"},
		{name: "param cast", e: func(*testing.T) (Expr, error) { return NewParam(0, f64), nil },
			params: []scalar.Scalar{scalar.NewInt64Scalar(3)}, want: "3,3,3", wantStr: "?1"},
		{name: "missing param", e: func(*testing.T) (Expr, error) { return NewParam(1, i64), nil },
			params: []scalar.Scalar{scalar.NewInt64Scalar(3)}, errCat: invalid()},
		{name: "outer column", e: func(*testing.T) (Expr, error) { return NewOuterColumn(1, 0, "x", i64), nil },
			outer: true, want: "20,20,20"},
		{name: "outer column depth 2", e: func(*testing.T) (Expr, error) { return NewOuterColumn(2, 1, "s", str), nil },
			outer: true, want: "g,g,g"},
		{name: "call string", e: func(t *testing.T) (Expr, error) {
			return NewCall("+", []Expr{NewColumn(0, "x", i64), lit(int64(1))})
		}, want: "2,3,NULL", wantStr: "(x + 1)"},
		{name: "cast", e: func(*testing.T) (Expr, error) { return NewCast(NewColumn(0, "x", i64), str) }, want: "1,2,NULL"},
		{name: "unknown function", e: func(*testing.T) (Expr, error) { return NewCall("nope", nil) }, errCat: func() *errs.Category { c := errs.NotFound; return &c }()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			batch := testBatch(t, mem, "[1, 2, null]", `["a", null, "c"]`)
			defer batch.Release()
			e, err := c.e(t)
			if err == nil {
				tc := &TaskContext{Alloc: mem, Params: c.params}
				if c.outer {
					tc = tc.WithOuter(grand, 0).WithOuter(outer, 1)
				}
				var out arrow.Array
				out, err = e.Eval(context.Background(), tc, batch)
				if err == nil {
					defer out.Release()
					if got := renderArray(out); got != c.want {
						t.Errorf("%s = %q, want %q", e, got, c.want)
					}
					if !arrow.TypeEqual(out.DataType(), e.DataType()) {
						t.Errorf("%s: type %s, DataType %s", e, out.DataType(), e.DataType())
					}
					if c.wantStr != "" && e.String() != c.wantStr {
						t.Errorf("String() = %q, want %q", e.String(), c.wantStr)
					}
				}
			}
			switch {
			case c.errCat != nil && (err == nil || errs.CategoryOf(err) != *c.errCat):
				t.Errorf("want %v error, got %v", *c.errCat, err)
			case c.errCat == nil && err != nil:
				t.Error(err)
			}
		})
	}
}

func TestPredicateToFilter(t *testing.T) {
	cases := []struct {
		t    arrow.DataType
		js   string
		want string
	}{
		{bln, "[true, false, null]", "1,0,0"},
		{i64, "[2, 0, null]", "1,0,0"},
		{str, `["1", "a", null]`, "1,0,0"},
		{null, "[null, null]", "0,0"},
	}
	for _, c := range cases {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		a := arr(t, mem, c.t, c.js)
		f, err := PredicateToFilter(context.Background(), &TaskContext{Alloc: mem}, a)
		if err != nil {
			t.Errorf("%s %s: %v", c.t, c.js, err)
		} else {
			if f.NullN() != 0 {
				t.Errorf("%s %s: filter has NULLs", c.t, c.js)
			}
			if got := renderArray(f); got != c.want {
				t.Errorf("%s %s = %q, want %q", c.t, c.js, got, c.want)
			}
			f.Release()
		}
		a.Release()
		mem.AssertSize(t, 0)
	}
}
