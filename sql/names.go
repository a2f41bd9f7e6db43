package sql

import (
	"strings"

	"github.com/cachedb/cachedb/planner"
)

// displayName names a column computed by e for EXPLAIN and messages: a column keeps its name,
// an aggregate reads like its SQL (sum(a)); other expressions use their String form.
func displayName(e planner.Expr) string {
	switch e := e.(type) {
	case *planner.ColumnRef:
		return e.Name
	case *planner.AggregateCall:
		if len(e.Args) == 0 {
			return e.Func + "(*)"
		}
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = displayName(a)
		}
		d := ""
		if e.Distinct {
			d = "DISTINCT "
		}
		return e.Func + "(" + d + strings.Join(args, ", ") + ")"
	}
	return e.String()
}
