package planner

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// ColumnID identifies a column produced somewhere in a logical plan. IDs are unique within one
// statement (the binder allocates them), so expressions keep pointing at the right column when
// the optimizer reorders, prunes or pushes nodes around. Physical planning turns IDs into
// positions.
type ColumnID int64

// Expr is a logical scalar expression. The set of implementations is closed (sealed by the
// unexported method); every pass over expressions switches on these types.
type Expr interface {
	// Type is the expression's Arrow type; arrow.Null for an untyped NULL literal.
	Type() arrow.DataType
	String() string
	expr()
}

// ColumnRef reads a column of the input of the node that holds the expression, or, inside a
// correlated subquery, a column of an enclosing query's input.
type ColumnRef struct {
	ID   ColumnID
	Name string // for EXPLAIN and error messages only
	T    arrow.DataType
}

// Literal is a constant. A SQL NULL is a null scalar of type arrow.Null, unless a cast typed it.
type Literal struct {
	Value scalar.Scalar
}

// Param is the i-th ? placeholder (0-based) of a prepared statement.
type Param struct {
	Index int
	T     arrow.DataType // arrow.Null until bound
}

// Call applies a scalar function or operator, by the canonical name exec.ResolveScalar
// documents. T is the result type exec.ResolveScalar returned for the argument types.
type Call struct {
	Func string
	Args []Expr
	T    arrow.DataType
}

// Cast converts Expr to To with MySQL CAST semantics.
type Cast struct {
	Expr Expr
	To   arrow.DataType
}

// When is one WHEN … THEN … arm of a CASE.
type When struct {
	Cond Expr // with a CASE operand, the value compared to it; otherwise a boolean condition
	Then Expr
}

// Case is CASE [Operand] WHEN … THEN … [ELSE …] END. Else is nil when absent (NULL).
type Case struct {
	Operand Expr
	Whens   []When
	Else    Expr
	T       arrow.DataType
}

// ScalarSubquery is (SELECT …) used as a value: Plan has one column and yields at most one
// row (more is an error at execution). Outer column references inside Plan make it correlated.
type ScalarSubquery struct {
	Plan Plan
}

// Exists is [NOT] EXISTS (SELECT …).
type Exists struct {
	Plan    Plan
	Negated bool
}

// InSubquery is Expr [NOT] IN (SELECT …) with SQL NULL semantics: NULL when no row matches
// and either side has a NULL.
type InSubquery struct {
	Expr    Expr
	Plan    Plan
	Negated bool
}

// QuantifiedSubquery is Expr Op ANY (SELECT …) (All false; SOME is ANY) or Expr Op ALL
// (SELECT …), Op one of =, <>, <, <=, >, >=, with MySQL's NULL semantics: ANY is TRUE when the
// comparison holds for some value, ALL when it holds for every value; an empty set gives FALSE
// for ANY and TRUE for ALL; otherwise a NULL comparison that could decide it makes it NULL.
type QuantifiedSubquery struct {
	Expr Expr
	Op   string
	All  bool
	Plan Plan
}

// AggregateCall is an aggregate function. It appears only in Aggregate.Aggs; everywhere else the
// aggregate's result is referenced by a ColumnRef to the Aggregate's output column.
type AggregateCall struct {
	Func     string // lower-case: count, sum, avg, min, max, …; "count" with no Args is COUNT(*)
	Args     []Expr
	Distinct bool
	T        arrow.DataType
}

func (*ColumnRef) expr()      {}
func (*Literal) expr()        {}
func (*Param) expr()          {}
func (*Call) expr()           {}
func (*Cast) expr()           {}
func (*Case) expr()           {}
func (*ScalarSubquery) expr() {}
func (*Exists) expr()         {}
func (*InSubquery) expr()     {}
func (*AggregateCall) expr()  {}

func (*QuantifiedSubquery) expr()                  {}
func (e *QuantifiedSubquery) Type() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (e *ColumnRef) Type() arrow.DataType { return e.T }
func (e *Literal) Type() arrow.DataType   { return e.Value.DataType() }
func (e *Param) Type() arrow.DataType     { return e.T }
func (e *Call) Type() arrow.DataType      { return e.T }
func (e *Cast) Type() arrow.DataType      { return e.To }
func (e *Case) Type() arrow.DataType      { return e.T }
func (e *ScalarSubquery) Type() arrow.DataType {
	return e.Plan.Schema()[0].Type
}
func (e *Exists) Type() arrow.DataType        { return arrow.FixedWidthTypes.Boolean }
func (e *InSubquery) Type() arrow.DataType    { return arrow.FixedWidthTypes.Boolean }
func (e *AggregateCall) Type() arrow.DataType { return e.T }

func (e *ColumnRef) String() string { return fmt.Sprintf("%s#%d", e.Name, e.ID) }
func (e *Literal) String() string {
	if !e.Value.IsValid() {
		return "NULL"
	}
	if e.Value.DataType().ID() == arrow.STRING {
		return fmt.Sprintf("'%s'", strings.ReplaceAll(e.Value.String(), "'", "''"))
	}
	return e.Value.String()
}
func (e *Param) String() string { return fmt.Sprintf("?%d", e.Index+1) }
func (e *Call) String() string {
	args := exprList(e.Args)
	switch {
	case len(e.Args) == 2 && isInfix(e.Func):
		return fmt.Sprintf("(%s %s %s)", e.Args[0], e.Func, e.Args[1])
	case e.Func == "neg" && len(e.Args) == 1:
		return fmt.Sprintf("(-%s)", e.Args[0])
	}
	return fmt.Sprintf("%s(%s)", e.Func, args)
}
func (e *Cast) String() string { return fmt.Sprintf("CAST(%s AS %s)", e.Expr, e.To) }
func (e *Case) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	if e.Operand != nil {
		fmt.Fprintf(&b, " %s", e.Operand)
	}
	for _, w := range e.Whens {
		fmt.Fprintf(&b, " WHEN %s THEN %s", w.Cond, w.Then)
	}
	if e.Else != nil {
		fmt.Fprintf(&b, " ELSE %s", e.Else)
	}
	b.WriteString(" END")
	return b.String()
}
func (e *ScalarSubquery) String() string { return "(subquery)" }
func (e *Exists) String() string {
	if e.Negated {
		return "NOT EXISTS(subquery)"
	}
	return "EXISTS(subquery)"
}
func (e *InSubquery) String() string {
	if e.Negated {
		return fmt.Sprintf("%s NOT IN (subquery)", e.Expr)
	}
	return fmt.Sprintf("%s IN (subquery)", e.Expr)
}
func (e *QuantifiedSubquery) String() string {
	q := "ANY"
	if e.All {
		q = "ALL"
	}
	return fmt.Sprintf("%s %s %s (subquery)", e.Expr, e.Op, q)
}
func (e *AggregateCall) String() string {
	if len(e.Args) == 0 {
		return e.Func + "(*)"
	}
	d := ""
	if e.Distinct {
		d = "DISTINCT "
	}
	return fmt.Sprintf("%s(%s%s)", e.Func, d, exprList(e.Args))
}

func exprList(es []Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return strings.Join(parts, ", ")
}

func isInfix(f string) bool {
	switch f {
	case "+", "-", "*", "/", "div", "%", "=", "<>", "<", "<=", ">", ">=", "<=>", "and", "or", "xor", "&", "|", "^", "<<", ">>", "like":
		return true
	}
	return false
}
