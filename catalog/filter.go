package catalog

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// CompareOp is the comparison a Predicate makes.
type CompareOp int

const (
	OpEq CompareOp = iota
	OpNotEq
	OpLt
	OpLtEq
	OpGt
	OpGtEq
	// OpIn holds when the column equals any of Values.
	OpIn
	// OpIsNull and OpIsNotNull take no values.
	OpIsNull
	OpIsNotNull
)

var opNames = [...]string{"=", "!=", "<", "<=", ">", ">=", "IN", "IS NULL", "IS NOT NULL"}

func (o CompareOp) String() string { return opNames[o] }

// Predicate compares one table column with constants.
type Predicate struct {
	// Column is an index into the table schema (not into ScanRequest.Columns).
	Column int
	Op     CompareOp
	// Values are never null; their Arrow type may differ from the column's (an int64 constant
	// compared with an int32 column, a string with a date): a source converts them or, when it
	// cannot, ignores the predicate.
	Values []scalar.Scalar
}

// Disjunction holds when any of its predicates holds (an OR of column conditions).
type Disjunction []Predicate

// Filter is a conjunction of disjunctions (an AND of ORs). Column comparisons the planner could
// not express this way are simply left out, so a Filter is always implied by the query's real
// condition: a row the query keeps satisfies it.
type Filter []Disjunction

// String renders the filter for plans and errors, naming columns by index.
func (f Filter) String() string {
	parts := make([]string, len(f))
	for i, d := range f {
		ors := make([]string, len(d))
		for j, p := range d {
			var b strings.Builder
			b.WriteString("#")
			b.WriteString(strconv.Itoa(p.Column))
			b.WriteString(" ")
			b.WriteString(p.Op.String())
			for k, v := range p.Values {
				if k == 0 {
					b.WriteString(" ")
				} else {
					b.WriteString(",")
				}
				b.WriteString(v.String())
			}
			ors[j] = b.String()
		}
		parts[i] = strings.Join(ors, " OR ")
	}
	return strings.Join(parts, " AND ")
}
