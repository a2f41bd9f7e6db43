package sql

import (
	"errors"

	"github.com/cachedb/cachedb/internal/errs"

	"github.com/cachedb/cachedb/planner"
)

// An aggregate inside a subquery whose arguments read only the columns of one enclosing query
// block belongs to that block, as in MySQL: SELECT (SELECT SUM(t.a) FROM u LIMIT 1) FROM t is
// an aggregate query over t (one row), and the subquery reads the sum as an outer column.
//
// The binder learns this only while it binds the subquery, after the enclosing block chose
// whether it aggregates (by the aggregates written in it). A block bound without aggregation
// that turns out to own one is bound again with it (errOuterAggregate carries the request up),
// and a subquery bound as an aggregation because of such calls alone, with no aggregate of its
// own and no GROUP BY, is bound again without.

// errOuterAggregate asks the block of scope to bind again as an aggregation. Where nothing
// does (the aggregate sits in the block's WHERE, ON or GROUP BY), it is MySQL's error.
type errOuterAggregate struct{ scope *scope }

func (e *errOuterAggregate) Error() string { return "Invalid use of group function" }
func (e *errOuterAggregate) Unwrap() error { return errs.Invalidf("Invalid use of group function") }

// needsAggregation reports whether err asks the block of sc to aggregate.
func needsAggregation(err error, sc *scope) bool {
	var oa *errOuterAggregate
	return errors.As(err, &oa) && oa.scope == sc
}

// outerOwner returns the enclosing scope an aggregate over args belongs to, or nil when it
// belongs to the block of local: its arguments read columns of local, of no block, of several
// blocks, or contain subqueries.
func outerOwner(local *scope, args []planner.Expr) *scope {
	used := map[planner.ColumnID]bool{}
	for _, a := range args {
		if planner.HasSubquery(a) {
			return nil
		}
		planner.ExprColumns(a, used)
	}
	if len(used) == 0 {
		return nil
	}
	var owner *scope
	for id := range used {
		s := scopeOf(local, id)
		if s == nil || s == local || (owner != nil && owner != s) {
			return nil
		}
		owner = s
	}
	return owner
}

// scopeOf returns the scope, from s outward, whose columns include id.
func scopeOf(s *scope, id planner.ColumnID) *scope {
	for ; s != nil; s = s.outer {
		for _, c := range s.columns {
			if c.ID == id {
				return s
			}
		}
	}
	return nil
}
