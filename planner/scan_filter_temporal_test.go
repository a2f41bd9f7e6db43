package planner

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// dateScan is a scan of t1 whose columns are re-typed: a DATE and a DATETIME.
func dateScan(t *testing.T) (*Scan, *ColumnRef, *ColumnRef) {
	s := newPlanBuilder(t).scan("t1")
	s.Columns[0].Type = arrow.FixedWidthTypes.Date32
	s.Columns[1].Type = &arrow.TimestampType{Unit: arrow.Microsecond}
	return s, col(s.Columns[0]), col(s.Columns[1])
}

func TestScanFilterReadsDateTextAsTheComparisonDoes(t *testing.T) {
	s, d, ts := dateScan(t)
	str := func(v string) *Literal { return &Literal{Value: scalar.NewStringScalar(v)} }
	s.Filters = []Expr{
		cmp(">=", d, str("2020-1-2")),                    // unpadded text is a date too
		cmp("<", ts, str("20200103")),                    // so are digits
		cmp("=", d, str("2020-02-30")),                   // no such day: NULL, nothing pushed
		call("in", d, str("2020-01-05 10:00"), str("x")), // a DATE column takes the date part
	}
	got := scanFilter(s).String()
	want := "#0 >= 2020-01-02 AND #1 < 2020-01-03 00:00:00 AND #0 IN 2020-01-05"
	if got != want {
		t.Fatalf("scanFilter:\n got %s\nwant %s", got, want)
	}
}

func TestScanFilterTurnsYearAndDateIntoRanges(t *testing.T) {
	s, d, ts := dateScan(t)
	year := func(x Expr) *Call { return &Call{Func: "year", Args: []Expr{x}, T: arrow.PrimitiveTypes.Int64} }
	dateOf := func(x Expr) *Call { return &Call{Func: "date", Args: []Expr{x}, T: arrow.FixedWidthTypes.Date32} }
	s.Filters = []Expr{
		cmp("=", year(ts), lit(2024)),
		cmp("<", lit(2020), year(d)), // flipped: YEAR(d) > 2020
		cmp("<=", year(d), lit(2030)),
		cmp("=", year(d), &Literal{Value: scalar.NewStringScalar("2024")}),    // not an integer: left to the scan
		cmp("<=", dateOf(ts), &Literal{Value: scalar.NewDate32Scalar(19727)}), // DATE(ts) <= 2024-01-05
		cmp("=", dateOf(ts), &Literal{Value: scalar.NewDate32Scalar(19727)}),
		cmp("=", year(d), &Literal{Value: scalar.NewDate32Scalar(19727)}), // YEAR compared with a date: left to the scan
	}
	got := scanFilter(s).String()
	want := "#1 >= 2024-01-01 AND #1 < 2025-01-01 AND #0 >= 2021-01-01 AND #0 < 2031-01-01 AND " +
		"#1 < 2024-01-06 AND #1 >= 2024-01-05 AND #1 < 2024-01-06"
	if got != want {
		t.Fatalf("scanFilter:\n got %s\nwant %s", got, want)
	}
}
