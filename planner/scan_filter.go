package planner

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/catalog"
)

// scanFilter translates the filters pushed into a scan into the catalog.Filter a source uses to
// skip data (Iceberg partitions, files and row groups). Only comparisons of a bare column with
// constants translate; every other conjunct is left out, which keeps the result implied by the
// filters — the scan still evaluates them all on every row it reads.
//
// A comparison is translated only when MySQL would compare the two sides in the column's own
// type class: a number with a number, a string with a string, a date or timestamp with a
// date, timestamp or string. `str_col = 5` compares as doubles in MySQL ('5.0' = 5), so pushing
// it down as a string equality could skip matching rows; it is left to the scan.
func scanFilter(s *Scan) catalog.Filter {
	var out catalog.Filter
	for _, f := range s.Filters {
		for _, c := range conjuncts(f) {
			if d, ok := scanDisjunction(s, c); ok {
				out = append(out, d...)
			}
		}
	}
	return out
}

// scanDisjunction translates one conjunct. BETWEEN yields two conjuncts, hence the slice.
func scanDisjunction(s *Scan, e Expr) (catalog.Filter, bool) {
	c, ok := e.(*Call)
	if !ok {
		return nil, false
	}
	switch c.Func {
	case "or":
		var d catalog.Disjunction
		for _, arg := range chain(c, "or") {
			sub, ok := scanDisjunction(s, arg)
			if !ok || len(sub) != 1 {
				return nil, false
			}
			d = append(d, sub[0]...)
		}
		return catalog.Filter{d}, true
	case "between":
		if len(c.Args) != 3 {
			return nil, false
		}
		lo, ok1 := scanComparison(s, ">=", c.Args[0], c.Args[1])
		hi, ok2 := scanComparison(s, "<=", c.Args[0], c.Args[2])
		if !ok1 || !ok2 {
			return nil, false
		}
		return catalog.Filter{{lo}, {hi}}, true
	case "in":
		col, ok := scanColumn(s, c.Args[0])
		if !ok || len(c.Args) < 2 {
			return nil, false
		}
		p := catalog.Predicate{Column: col, Op: catalog.OpIn}
		for _, a := range c.Args[1:] {
			lit, ok := a.(*Literal)
			if !ok {
				return nil, false
			}
			if !lit.Value.IsValid() {
				continue // x IN (…, NULL) is never TRUE through the NULL
			}
			if !comparableClasses(c.Args[0].Type(), lit.Value.DataType()) {
				return nil, false
			}
			v, ok := temporalConstant(c.Args[0].Type(), lit.Value)
			if !ok {
				continue // text that is no date never equals the column
			}
			p.Values = append(p.Values, v)
		}
		return catalog.Filter{{p}}, true
	case "is_null", "is_not_null":
		col, ok := scanColumn(s, c.Args[0])
		if !ok {
			return nil, false
		}
		op := catalog.OpIsNull
		if c.Func == "is_not_null" {
			op = catalog.OpIsNotNull
		}
		return catalog.Filter{{{Column: col, Op: op}}}, true
	case "=", "<=>", "<>", "<", "<=", ">", ">=":
		if len(c.Args) != 2 {
			return nil, false
		}
		if f, ok := truncatedRange(s, c.Func, c.Args[0], c.Args[1]); ok {
			return f, true
		}
		if f, ok := truncatedRange(s, flipComparison[c.Func], c.Args[1], c.Args[0]); ok {
			return f, true
		}
		p, ok := scanComparison(s, c.Func, c.Args[0], c.Args[1])
		if !ok {
			p, ok = scanComparison(s, flipComparison[c.Func], c.Args[1], c.Args[0])
		}
		if !ok {
			return nil, false
		}
		return catalog.Filter{{p}}, true
	}
	return nil, false
}

var flipComparison = map[string]string{
	"=": "=", "<=>": "<=>", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<=",
}

var comparisonOps = map[string]catalog.CompareOp{
	"=": catalog.OpEq, "<=>": catalog.OpEq, "<>": catalog.OpNotEq,
	"<": catalog.OpLt, "<=": catalog.OpLtEq, ">": catalog.OpGt, ">=": catalog.OpGtEq,
}

// scanComparison translates `column op literal`.
func scanComparison(s *Scan, op string, left, right Expr) (catalog.Predicate, bool) {
	col, ok := scanColumn(s, left)
	if !ok {
		return catalog.Predicate{}, false
	}
	lit, ok := right.(*Literal)
	if !ok || !lit.Value.IsValid() || !comparableClasses(left.Type(), lit.Value.DataType()) {
		return catalog.Predicate{}, false
	}
	v, ok := temporalConstant(left.Type(), lit.Value)
	if !ok {
		return catalog.Predicate{}, false
	}
	return catalog.Predicate{Column: col, Op: comparisonOps[op], Values: []scalar.Scalar{v}}, true
}

// scanColumn returns the table column index e reads, when e is a bare column of s.
func scanColumn(s *Scan, e Expr) (int, bool) {
	ref, ok := e.(*ColumnRef)
	if !ok {
		return 0, false
	}
	cols, idx := s.readColumns()
	for i, c := range cols {
		if c.ID == ref.ID {
			return idx[i], true
		}
	}
	return 0, false
}

// comparableClasses reports whether MySQL compares a column of type col with a constant of type
// lit in the column's own class (see scanFilter).
func comparableClasses(col, lit arrow.DataType) bool {
	switch {
	case isNumeric(col):
		return isNumeric(lit)
	case isString(col):
		return isString(lit)
	case isTemporal(col):
		return isTemporal(lit) || isString(lit)
	}
	return false
}

func isNumeric(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32,
		arrow.UINT64, arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128, arrow.DECIMAL256:
		return true
	}
	return false
}

func isString(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return true
	}
	return false
}

func isTemporal(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP:
		return true
	}
	return false
}
