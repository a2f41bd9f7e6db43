package sql

import (
	"github.com/apache/arrow-go/v18/arrow"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// aggregation collects the aggregate calls of one query block (from SELECT, HAVING and ORDER
// BY) into the single planner.Aggregate that computes them. Identical calls are computed once.
type aggregation struct {
	calls   []*planner.AggregateCall
	columns []planner.Column // output column of each call
	byKey   map[string]int
}

// add registers call (deduplicated) and returns a reference to its output column.
func (a *aggregation) add(b *binder, call *planner.AggregateCall) *planner.ColumnRef {
	key := exprKey(call)
	if i, ok := a.byKey[key]; ok {
		return columnRef(a.columns[i])
	}
	if a.byKey == nil {
		a.byKey = map[string]int{}
	}
	col := planner.Column{ID: b.newID(), Name: displayName(call), Type: call.T, Nullable: call.Func != "count"}
	a.byKey[key] = len(a.calls)
	a.calls = append(a.calls, call)
	a.columns = append(a.columns, col)
	return columnRef(col)
}

// aggregateNames maps vitess's aggregate nodes to the registry's names.
func aggregateName(f sqlparser.AggrFunc) (name string, distinct bool, err error) {
	switch f := f.(type) {
	case *sqlparser.CountStar:
		return "count", false, nil
	case *sqlparser.Count:
		return "count", f.Distinct, nil
	case *sqlparser.Sum:
		return "sum", f.Distinct, nil
	case *sqlparser.Avg:
		return "avg", f.Distinct, nil
	case *sqlparser.Min:
		return "min", f.Distinct, nil
	case *sqlparser.Max:
		return "max", f.Distinct, nil
	case *sqlparser.BitAnd:
		return "bit_and", false, nil
	case *sqlparser.BitOr:
		return "bit_or", false, nil
	case *sqlparser.BitXor:
		return "bit_xor", false, nil
	case *sqlparser.AnyValue:
		return "any_value", false, nil
	case *sqlparser.GroupConcatExpr:
		if f.Separator != "" && f.Separator != "','" && f.Separator != "," {
			return "", false, errs.Unsupportedf("GROUP_CONCAT with SEPARATOR %s is not supported", f.Separator)
		}
		if len(f.OrderBy) > 0 || f.Limit != nil {
			return "", false, errs.Unsupportedf("GROUP_CONCAT with ORDER BY or LIMIT is not supported")
		}
		return "group_concat", f.Distinct, nil
	}
	return f.AggrName(), false, nil
}

// aggregate binds an aggregate call where ctx allows one, and returns a reference to the
// aggregate's output column.
func (b *binder) aggregate(f sqlparser.AggrFunc, ctx *exprContext) (planner.Expr, error) {
	if over := overClause(f); over {
		return nil, errs.Unsupportedf("window functions are not supported: %s", sqlparser.String(f))
	}
	name, distinct, err := aggregateName(f)
	if err != nil {
		return nil, err
	}
	args, err := b.exprs(f.GetArgs(), ctx.withoutAggregates())
	if err != nil {
		if ctx.agg == nil {
			return nil, errs.Invalidf("Invalid use of group function")
		}
		return nil, err
	}
	if _, star := f.(*sqlparser.CountStar); star {
		args = nil
	}
	aggs := ctx.agg
	if owner := outerOwner(ctx.scope, args); owner != nil {
		// An aggregate of an enclosing block's columns only: computed there.
		if owner.agg == nil {
			return nil, &errOuterAggregate{scope: owner}
		}
		aggs = owner.agg
	}
	if aggs == nil {
		return nil, errs.Invalidf("Invalid use of group function")
	}
	types := make([]arrow.DataType, len(args))
	for i, a := range args {
		types[i] = a.Type()
	}
	t, err := resolveAggregateType(name, types, distinct)
	if err != nil {
		return nil, err
	}
	if x, ok, err := b.wideAggregate(aggs, name, args, distinct, t); ok || err != nil {
		return x, err
	}
	return aggs.add(b, &planner.AggregateCall{Func: name, Args: args, Distinct: distinct, T: t}), nil
}

// wideAggregate computes SUM or AVG of a decimal quotient on the quotient's full precision
// (sql/quotients.go) and narrows the result to the declared type t; ok is false when the
// argument is no quotient.
func (b *binder) wideAggregate(aggs *aggregation, name string, args []planner.Expr, distinct bool, t arrow.DataType) (planner.Expr, bool, error) {
	declared, isDecimal := t.(*arrow.Decimal128Type)
	if (name != "sum" && name != "avg") || len(args) != 1 || !isDecimal {
		return nil, false, nil
	}
	w, err := b.wideOperand(args[0])
	if err != nil || w == args[0] {
		return nil, false, err
	}
	wt, err := resolveAggregateType(name, []arrow.DataType{w.Type()}, distinct)
	if err != nil {
		return nil, false, nil
	}
	ref := aggs.add(b, &planner.AggregateCall{Func: name, Args: []planner.Expr{w}, Distinct: distinct, T: wt})
	if arrow.TypeEqual(wt, declared) {
		return ref, true, nil
	}
	narrow := &planner.Cast{Expr: ref, To: declared}
	if b.wide == nil {
		b.wide = map[*planner.Cast]planner.Expr{}
	}
	b.wide[narrow] = ref
	return narrow, true, nil
}

// overClause reports whether an aggregate is used as a window function.
func overClause(f sqlparser.AggrFunc) bool {
	switch f := f.(type) {
	case *sqlparser.Count:
		return f.OverClause != nil
	case *sqlparser.CountStar:
		return f.OverClause != nil
	case *sqlparser.Sum:
		return f.OverClause != nil
	case *sqlparser.Avg:
		return f.OverClause != nil
	case *sqlparser.Min:
		return f.OverClause != nil
	case *sqlparser.Max:
		return f.OverClause != nil
	}
	return false
}

// containsAggregate reports whether e calls an aggregate function outside nested subqueries.
func containsAggregate(nodes ...sqlparser.SQLNode) bool {
	found := false
	for _, n := range nodes {
		if n == nil {
			continue
		}
		_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
			switch node.(type) {
			case *sqlparser.Subquery, *sqlparser.DerivedTable:
				return false, nil
			case sqlparser.AggrFunc:
				found = true
				return false, nil
			}
			return !found, nil
		}, n)
	}
	return found
}
