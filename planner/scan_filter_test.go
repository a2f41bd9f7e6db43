package planner

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

func call(name string, args ...Expr) *Call {
	return &Call{Func: name, Args: args, T: arrow.FixedWidthTypes.Boolean}
}

func TestScanFilterTranslatesColumnComparisons(t *testing.T) {
	b := newPlanBuilder(t)
	s := b.scan("t1")
	// Project only b and c, so table indexes differ from scan positions.
	s.Columns, s.Indices = s.Columns[1:], s.Indices[1:]
	bCol, cCol := col(s.Columns[0]), col(s.Columns[1])
	str := &Literal{Value: scalar.NewStringScalar("x")}
	null := &Literal{Value: scalar.MakeNullScalar(arrow.PrimitiveTypes.Int64)}
	s.Filters = []Expr{
		call("and", cmp(">=", bCol, lit(5)), cmp("<", lit(9), cCol)),
		call("or", cmp("=", bCol, lit(1)), call("in", cCol, lit(2), null, lit(3))),
		call("between", cCol, lit(10), lit(20)),
		call("is_null", bCol),
		cmp("=", bCol, str),                     // string constant vs number column: MySQL compares as doubles
		cmp("=", call("abs", bCol), lit(1)),     // not a bare column
		call("or", cmp("=", bCol, lit(1)), str), // one side untranslatable: the whole OR stays out
		cmp("=", bCol, null),                    // never TRUE; nothing to prune with
	}
	got := scanFilter(s).String()
	want := "#1 >= 5 AND #2 > 9 AND #1 = 1 OR #2 IN 2,3 AND #2 >= 10 AND #2 <= 20 AND #1 IS NULL"
	if got != want {
		t.Fatalf("scanFilter:\n got %s\nwant %s", got, want)
	}
}

func TestScanFilterOfUnfilteredScanIsEmpty(t *testing.T) {
	b := newPlanBuilder(t)
	if f := scanFilter(b.scan("t1")); len(f) != 0 {
		t.Fatalf("want no filter, got %s", f)
	}
}
