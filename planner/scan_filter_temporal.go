package planner

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/exec"
)

// Date and time conditions in scan filters (see scanFilter).

// temporalConstant converts a string constant compared with a date or timestamp column into a
// value of the column's type, exactly as the comparison converts it (MySQL's formats:
// '2020-1-2', '20200102', …; a DATE column takes the date part), so that the source can prune
// with it. Other constants are returned as they are; ok is false for text that is not a date,
// which the comparison turns into NULL and which is then not pushed down.
func temporalConstant(col arrow.DataType, v scalar.Scalar) (scalar.Scalar, bool) {
	s, isString := v.(*scalar.String)
	if !isString || !isTemporal(col) {
		return v, true
	}
	us, _, ok := exec.ParseDateTimeText(string(s.Data()))
	if !ok {
		return nil, false
	}
	switch t := col.(type) {
	case *arrow.Date32Type:
		return scalar.NewDate32Scalar(arrow.Date32(floorDivInt(us, 86_400_000_000))), true
	case *arrow.TimestampType:
		per := int64(t.Unit.Multiplier()) // nanoseconds per tick
		if per >= 1000 {
			return scalar.NewTimestampScalar(arrow.Timestamp(floorDivInt(us, per/1000)), t), true
		}
		return scalar.NewTimestampScalar(arrow.Timestamp(us*(1000/per)), t), true
	}
	return v, true
}

func floorDivInt(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// truncatedRange translates `YEAR(col) op n` and `DATE(col) op d` on a date or timestamp column
// into conditions on the column itself (YEAR(col) = 2024 is col >= 2024-01-01 AND
// col < 2025-01-01; DATE(col) <= '2024-01-05' is col < 2024-01-06), which a source can prune
// partitions and row groups with. ok is false for anything else.
func truncatedRange(s *Scan, op string, left, right Expr) (catalog.Filter, bool) {
	call, ok := left.(*Call)
	if !ok || len(call.Args) != 1 || !isTemporal(call.Args[0].Type()) {
		return nil, false
	}
	col, ok := scanColumn(s, call.Args[0])
	if !ok {
		return nil, false
	}
	lit, ok := right.(*Literal)
	if !ok || !lit.Value.IsValid() {
		return nil, false
	}
	// start(k) is the first day of the k-th period (a year, a day); a value v of the column lies
	// in the period k when start(k) <= v < start(k+1).
	var start func(k int64) int64
	var k int64
	switch v := lit.Value.(type) {
	case *scalar.Int64:
		if call.Func != "year" || v.Value < 1 || v.Value > 9998 {
			return nil, false
		}
		k, start = v.Value, func(y int64) int64 { return exec.DaysFromCivil(y, 1, 1) }
	case *scalar.Date32:
		if call.Func != "date" {
			return nil, false
		}
		k, start = int64(v.Value), func(d int64) int64 { return d }
	default:
		return nil, false
	}
	pred := func(o catalog.CompareOp, k int64) catalog.Disjunction {
		day := scalar.NewDate32Scalar(arrow.Date32(start(k)))
		return catalog.Disjunction{{Column: col, Op: o, Values: []scalar.Scalar{day}}}
	}
	switch op {
	case "=", "<=>":
		return catalog.Filter{pred(catalog.OpGtEq, k), pred(catalog.OpLt, k+1)}, true
	case "<":
		return catalog.Filter{pred(catalog.OpLt, k)}, true
	case "<=":
		return catalog.Filter{pred(catalog.OpLt, k+1)}, true
	case ">":
		return catalog.Filter{pred(catalog.OpGtEq, k+1)}, true
	case ">=":
		return catalog.Filter{pred(catalog.OpGtEq, k)}, true
	}
	return nil, false
}
