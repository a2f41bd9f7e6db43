package sql

import (
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// SessionAssignment is one system variable a SET statement assigns: its name in lower case and
// the value as text (an integer's digits, a string's contents), or Default for SET x = DEFAULT.
type SessionAssignment struct {
	Name    string
	Value   string
	Default bool
	// Global is true for SET GLOBAL x / SET @@global.x (and PERSIST forms).
	Global bool
	// Expression is true when the value is neither a literal, a bare word nor DEFAULT; Value
	// is then the expression's text.
	Expression bool
}

// SessionAssignments reads a SET statement: whether text is one and, if so, the system
// variables it assigns (user variables, @x, are left out). The caller decides what each
// assignment means; most are accepted and ignored, as MySQL clients send many.
func SessionAssignments(text string) ([]SessionAssignment, bool) {
	stmt, err := parse(text)
	if err != nil {
		return nil, false
	}
	set, ok := stmt.(*sqlparser.Set)
	if !ok {
		return nil, false
	}
	var out []SessionAssignment
	for _, e := range set.Exprs {
		if e.Var == nil || e.Var.Scope == sqlparser.VariableScope {
			continue
		}
		a := SessionAssignment{
			Name:   strings.ToLower(e.Var.Name.String()),
			Global: e.Var.Scope != sqlparser.SessionScope && e.Var.Scope != sqlparser.NoScope,
		}
		switch v := e.Expr.(type) {
		case *sqlparser.Literal:
			a.Value = v.Val
		case *sqlparser.Default:
			a.Default = true
		case *sqlparser.ColName:
			// A bare word (SET x = ON) parses as a column name.
			a.Value = v.Name.String()
		case *sqlparser.UnaryExpr:
			if lit, ok := v.Expr.(*sqlparser.Literal); ok && v.Operator == sqlparser.UMinusOp {
				a.Value = "-" + lit.Val
			} else {
				a.Value, a.Expression = sqlparser.String(e.Expr), true
			}
		default:
			a.Value, a.Expression = sqlparser.String(e.Expr), true
		}
		out = append(out, a)
	}
	return out, true
}
