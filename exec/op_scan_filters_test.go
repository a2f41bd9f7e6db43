package exec

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	memtable "github.com/cachedb/cachedb/catalog/memory"
)

// A scan with several filters, keeping most rows and few, with NULL outcomes and columns read
// only by the filters, keeps exactly the rows every filter keeps, in order, whatever order the
// filters come in.
func TestScanFiltersCombineMasks(t *testing.T) {
	tc := newTestContext(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: opString, Nullable: true},
		{Name: "k", Type: opInt64, Nullable: true},
		{Name: "f", Type: opInt64, Nullable: true},
	}, nil)
	cat := memtable.NewCatalog("test")
	tbl, err := cat.CreateTable(context.Background(), "t", schema, false)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	var want []string
	for i := range 1000 {
		var k any = i
		if i%97 == 0 {
			k = nil
		}
		rows = append(rows, []any{fmt.Sprintf("r%04d", i), k, i % 10})
		if k != nil && i > 10 && i%10 < 5 && i < 900 && i != 500 {
			want = append(want, fmt.Sprintf("r%04d", i))
		}
	}
	for from := 0; from < len(rows); from += 300 {
		b := batchOf(t, memory.NewGoAllocator(), schema, rows[from:min(from+300, len(rows))]...)
		if err := tbl.(catalog.InsertableTable).Append(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	k, f, s := intCol(1, "k"), intCol(2, "f"), NewColumn(0, "s", opString)
	call := func(op string, l, r Expr) Expr {
		e, err := NewCall(op, []Expr{l, r})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	filters := []Expr{
		call(">", k, lit(int64(10))),  // keeps nearly all (NULLs dropped)
		call("<", f, lit(int64(5))),   // keeps half
		call("<", k, lit(int64(900))), // keeps most
		call("<>", s, lit("r0500")),   // drops one
	}
	for _, order := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {0, 2, 3, 1}} {
		var conds []Expr
		for _, i := range order {
			conds = append(conds, filters[i])
		}
		op, err := NewFilteringScan(tbl, "t", catalog.ScanRequest{Columns: []int{0, 1, 2}}, conds, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := collectRows(t, op, tc); !slices.Equal(got, want) {
			t.Errorf("filters in order %v: %d rows, want %d", order, len(got), len(want))
		}
	}
}

// Comparisons of fixed-width columns with constants or each other are the filters evaluated
// over rows an earlier filter dropped rather than copied past; strings, decimals, columns cast
// to be compared and other calls are not.
func TestCheapScanFilters(t *testing.T) {
	k, f, s := intCol(1, "k"), intCol(2, "f"), NewColumn(0, "s", opString)
	d := NewColumn(3, "d", &arrow.Decimal128Type{Precision: 15, Scale: 2})
	d2 := NewColumn(4, "d2", &arrow.Decimal128Type{Precision: 15, Scale: 2})
	call := func(op string, args ...Expr) Expr {
		e, err := NewCall(op, args)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, c := range []struct {
		e     Expr
		cheap bool
	}{
		{call(">=", k, lit(int64(10))), true},
		{call("<", k, f), true},
		{call("between", k, lit(int64(1)), lit(int64(5))), true},
		{call("in", k, lit(int64(1)), lit(int64(5))), true},
		{call("=", s, lit("x")), false},
		{call("in", s, lit("x"), lit("y")), false},
		{call("between", d, lit(int64(1)), lit(int64(5))), false},
		{call(">=", k, lit(2.5)), false}, // compared as DOUBLE: a cast of every row
		{call("<", d, d2), false},
		{call("<", k, NewColumn(5, "i32", arrow.PrimitiveTypes.Int32)), false}, // one side cast
		{call("+", k, lit(int64(1))), false},
		{call("<", call("+", k, lit(int64(1))), lit(int64(5))), false},
	} {
		if got := cheapFilter(c.e); got != c.cheap {
			t.Errorf("cheapFilter(%s) = %v, want %v", c.e, got, c.cheap)
		}
	}
}
