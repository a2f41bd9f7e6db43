package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// x LIKE 'pattern' with a literal pattern must give exactly what the general kernel gives:
// patterns of segments and of _, escapes (default, given, none, too long), NULL patterns, NULL
// rows, multi-byte text, numbers matched as their text, and sliced input. NOT of it too.
func TestLikeConstMatchesGeneral(t *testing.T) {
	null := NewLiteral(scalar.MakeNullScalar(arrow.Null))
	cases := []struct {
		name    string
		colType arrow.DataType
		js      string
		pats    [][]Expr // pattern, then the escape if any
	}{
		{"string", str, `["special requests", null, "a special b requests c", "requests special", "", "sp%ecial", "ab_c", "abxc", "naïve café", "special"]`, [][]Expr{
			{lit("%special%requests%")},
			{lit("special%")},
			{lit("%requests")},
			{lit("special")},
			{lit("%")},
			{lit("")},
			{lit("ab_c")},
			{lit("ab\\_c")},
			{lit("sp!%ecial"), lit("!")},
			{lit("sp%ecial"), lit("")},
			{lit("%ï%é")},
			{lit("na_ve%")},
			{null},
			{lit("a"), null},
			{lit("a"), lit("too long")},
		}},
		{"int64", i64, `[10, 105, null, -10, 1000, 7]`, [][]Expr{
			{lit("10%")},
			{lit("_0")},
			{lit("%0")},
		}},
	}
	for _, c := range cases {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		full := arr(t, mem, c.colType, c.js)
		sliced := array.NewSlice(full, 1, int64(full.Len()))
		for _, col := range []arrow.Array{full, sliced} {
			schema := arrow.NewSchema([]arrow.Field{{Name: "c", Type: c.colType, Nullable: true}}, nil)
			batch := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
			for _, pat := range c.pats {
				e, err := NewCall("like", append([]Expr{NewColumn(0, "c", c.colType)}, pat...))
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				spec, ok := e.(*likeConstExpr)
				if !ok {
					t.Fatalf("%s: NewCall(%s) is %T, want the constant-pattern LIKE", c.name, e, e)
				}
				checkSpecialized(t, mem, c.name, spec, spec.general, batch)
				not, err := NewCall("not", []Expr{spec})
				if err != nil {
					t.Fatal(err)
				}
				generalNot, err := NewCall("not", []Expr{spec.general})
				if err != nil {
					t.Fatal(err)
				}
				checkSpecialized(t, mem, c.name+" (NOT)", not, generalNot, batch)
			}
			batch.Release()
		}
		sliced.Release()
		full.Release()
		mem.AssertSize(t, 0)
	}
}

// NOT inverts each row of a sliced boolean column and keeps its NULLs.
func TestNotOfSlicedBooleans(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	full := arr(t, mem, arrow.FixedWidthTypes.Boolean, `[true, false, null, true, true, false, null, false, true, true, false, true]`)
	defer full.Release()
	for _, off := range []int64{0, 3, 5} {
		col := array.NewSlice(full, off, int64(full.Len())).(*array.Boolean)
		schema := arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}}, nil)
		batch := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
		e, err := NewCall("not", []Expr{NewColumn(0, "b", arrow.FixedWidthTypes.Boolean)})
		if err != nil {
			t.Fatal(err)
		}
		tc := &TaskContext{Alloc: mem}
		got, err := e.Eval(t.Context(), tc, batch)
		if err != nil {
			t.Fatal(err)
		}
		res := got.(*array.Boolean)
		for i := range col.Len() {
			if res.IsNull(i) != col.IsNull(i) || (col.IsValid(i) && res.Value(i) == col.Value(i)) {
				t.Errorf("offset %d row %d: NOT %v is %v", off, i, col.ValueStr(i), res.ValueStr(i))
			}
		}
		if res.NullN() != col.NullN() {
			t.Errorf("offset %d: %d NULLs, want %d", off, res.NullN(), col.NullN())
		}
		got.Release()
		batch.Release()
		col.Release()
	}
}
