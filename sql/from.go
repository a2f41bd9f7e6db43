package sql

import (
	"errors"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// from binds a FROM clause into a plan and the scope its names resolve against. Comma-separated
// items are cross joins, left to right. An empty FROM (or FROM DUAL) reads one row with no
// columns. outer is the enclosing query's scope; ON conditions may reference it.
func (b *binder) from(items []sqlparser.TableExpr, outer *scope) (planner.Plan, *scope, error) {
	sc := newScope(outer)
	if len(items) == 0 || isDual(items) {
		return oneRow(), sc, nil
	}
	var plan planner.Plan
	for _, item := range items {
		p, err := b.tableExpr(item, sc)
		if err != nil {
			return nil, nil, err
		}
		plan = crossJoin(plan, p)
	}
	return plan, sc, nil
}

// oneRow is the relation SELECT without FROM reads: one row, no columns.
func oneRow() planner.Plan {
	return &planner.Values{Rows: [][]planner.Expr{{}}}
}

// isDual reports whether the FROM clause is MySQL's dummy table DUAL.
func isDual(items []sqlparser.TableExpr) bool {
	if len(items) != 1 {
		return false
	}
	a, ok := items[0].(*sqlparser.AliasedTableExpr)
	if !ok {
		return false
	}
	t, ok := a.Expr.(sqlparser.TableName)
	return ok && t.Qualifier.IsEmpty() && strings.EqualFold(t.Name.String(), "dual")
}

// crossJoin joins right to left without a condition (left may be nil: then it is right).
func crossJoin(left, right planner.Plan) planner.Plan {
	if left == nil {
		return right
	}
	return &planner.Join{Left: left, Right: right, Kind: planner.CrossJoin, Columns: concatSchemas(left, right, false)}
}

// concatSchemas is the output of a join: left's columns then right's, the right ones made
// nullable for a left join.
func concatSchemas(left, right planner.Plan, rightNullable bool) []planner.Column {
	out := append([]planner.Column(nil), left.Schema()...)
	for _, c := range right.Schema() {
		if rightNullable {
			c.Nullable = true
		}
		out = append(out, c)
	}
	return out
}

// tableExpr binds one FROM item, adding its columns to sc.
func (b *binder) tableExpr(te sqlparser.TableExpr, sc *scope) (planner.Plan, error) {
	switch t := te.(type) {
	case *sqlparser.AliasedTableExpr:
		return b.aliasedTable(t, sc)
	case *sqlparser.ParenTableExpr:
		var plan planner.Plan
		for _, item := range t.Exprs {
			p, err := b.tableExpr(item, sc)
			if err != nil {
				return nil, err
			}
			plan = crossJoin(plan, p)
		}
		return plan, nil
	case *sqlparser.JoinTableExpr:
		return b.join(t, sc)
	}
	return nil, errs.Unsupportedf("table expression %s is not supported", sqlparser.String(te))
}

// aliasedTable binds a table name or a derived table, with its alias.
func (b *binder) aliasedTable(t *sqlparser.AliasedTableExpr, sc *scope) (planner.Plan, error) {
	alias := t.As.String()
	switch e := t.Expr.(type) {
	case sqlparser.TableName:
		name := tableName(e)
		if alias == "" {
			alias = defaultAlias(e)
		}
		if sc.hasTable(alias) {
			return nil, errs.Invalidf("Not unique table/alias: '%s'", alias)
		}
		if c := b.lookupCTE(e.Name.String()); c != nil && e.Qualifier.IsEmpty() {
			if len(t.Columns) > 0 {
				return nil, errs.Unsupportedf("column aliases on table %s are not supported", name)
			}
			return b.cteTable(c, alias, sc)
		}
		if p, err := b.view(name, alias, sc); p != nil || err != nil {
			return p, err
		}
		table, err := b.cat.Table(b.ctx, name)
		if err != nil {
			if errs.CategoryOf(err) == errs.NotFound {
				return nil, &errs.Error{Category: errs.NotFound, Msg: "Table '" + name + "' doesn't exist", Err: err}
			}
			return nil, err
		}
		schema := table.Schema()
		scan := &planner.Scan{Table: table, Name: name, Alias: alias}
		for i, f := range schema.Fields() {
			scan.Columns = append(scan.Columns, planner.Column{
				ID: b.newID(), Name: f.Name, Table: alias, Type: exec.CanonicalType(f.Type), Nullable: f.Nullable,
			})
			scan.Indices = append(scan.Indices, i)
		}
		if len(t.Columns) > 0 {
			return nil, errs.Unsupportedf("column aliases on table %s are not supported", name)
		}
		sc.add(alias, scan.Columns)
		return scan, nil
	case *sqlparser.DerivedTable:
		if alias == "" {
			return nil, errs.Invalidf("Every derived table must have its own alias")
		}
		if e.Lateral {
			return nil, errs.Unsupportedf("LATERAL derived tables are not supported")
		}
		if sc.hasTable(alias) {
			return nil, errs.Invalidf("Not unique table/alias: '%s'", alias)
		}
		// A derived table is not correlated: it sees no enclosing scope.
		p, err := b.tableStatement(e.Select, nil)
		if err != nil {
			return nil, err
		}
		cols := append([]planner.Column(nil), p.Schema()...)
		if len(t.Columns) > 0 && len(t.Columns) != len(cols) {
			return nil, errs.Invalidf("In definition of view, derived table or common table expression, SELECT list and column names list have different column counts")
		}
		for i := range cols {
			cols[i].Table = alias
			if len(t.Columns) > 0 {
				cols[i].Name = t.Columns[i].String()
			}
		}
		sc.add(alias, cols)
		return p, nil
	}
	return nil, errs.Unsupportedf("table expression %s is not supported", sqlparser.String(t))
}

// join binds [INNER|CROSS|LEFT|RIGHT|NATURAL] JOIN with ON or USING. A RIGHT JOIN becomes a
// LEFT JOIN with its sides swapped; the scope keeps the written order, so * is unaffected.
func (b *binder) join(j *sqlparser.JoinTableExpr, sc *scope) (planner.Plan, error) {
	start := len(sc.columns)
	left, err := b.tableExpr(j.LeftExpr, sc)
	if err != nil {
		return nil, err
	}
	leftCols := len(sc.columns)
	right, err := b.tableExpr(j.RightExpr, sc)
	if err != nil {
		return nil, err
	}
	kind := planner.InnerJoin
	swap := false
	switch j.Join {
	case sqlparser.LeftJoinType, sqlparser.NaturalLeftJoinType:
		kind = planner.LeftJoin
	case sqlparser.RightJoinType, sqlparser.NaturalRightJoinType:
		kind, swap = planner.LeftJoin, true
	}

	var using []string
	if j.Condition != nil {
		for _, c := range j.Condition.Using {
			using = append(using, c.String())
		}
	}
	switch j.Join {
	case sqlparser.NaturalJoinType, sqlparser.NaturalLeftJoinType, sqlparser.NaturalRightJoinType:
		using = commonNames(sc.columns[start:leftCols], sc.columns[leftCols:])
	}
	if len(using) > 0 {
		defer sc.putJoinedFirst(start, using)
	}

	var on planner.Expr
	switch {
	case len(using) > 0:
		on, err = b.usingCondition(sc, start, leftCols, using, swap)
	case j.Condition != nil && j.Condition.On != nil:
		on, err = b.condition(j.Condition.On, &exprContext{scope: sc, clause: "on clause"})
	}
	if err != nil {
		return nil, err
	}
	if on == nil && kind == planner.InnerJoin {
		kind = planner.CrossJoin
	}
	if on == nil && kind == planner.LeftJoin {
		on = trueLiteral()
	}
	if swap {
		left, right = right, left
	}
	return &planner.Join{Left: left, Right: right, Kind: kind, On: on, Columns: concatSchemas(left, right, kind == planner.LeftJoin)}, nil
}

// commonNames lists the column names both sides of a NATURAL join have, in left order.
func commonNames(left, right []scopeColumn) []string {
	var out []string
	for _, l := range left {
		if l.merged {
			continue
		}
		for _, r := range right {
			if !r.merged && strings.EqualFold(l.Name, r.Name) {
				out = append(out, l.Name)
				break
			}
		}
	}
	return out
}

// usingCondition builds l.c = r.c AND … for USING (c, …) and marks the copy that unqualified
// names must not see: the right one, or the left one for a RIGHT JOIN, whose right side is the
// one always present.
func (b *binder) usingCondition(sc *scope, start, leftCols int, names []string, rightJoin bool) (planner.Expr, error) {
	var on planner.Expr
	for _, name := range names {
		li := findColumn(sc.columns[start:leftCols], name)
		ri := findColumn(sc.columns[leftCols:], name)
		if li < 0 || ri < 0 {
			return nil, errs.NotFoundf("Unknown column '%s' in 'from clause'", name)
		}
		li, ri = li+start, ri+leftCols
		l, r := sc.columns[li], sc.columns[ri]
		eq, err := b.call("=", columnRef(l.Column), columnRef(r.Column))
		if err != nil {
			return nil, err
		}
		if rightJoin {
			sc.columns[li].merged = true
		} else {
			sc.columns[ri].merged = true
		}
		on, err = b.and(on, eq)
		if err != nil {
			return nil, err
		}
	}
	return on, nil
}

// findColumn returns the index of the unmerged column called name, -1 when none or ambiguous.
func findColumn(cols []scopeColumn, name string) int {
	found := -1
	for i, c := range cols {
		if c.merged || !strings.EqualFold(c.Name, name) {
			continue
		}
		if found >= 0 {
			return -1
		}
		found = i
	}
	return found
}

// and conjoins two conditions; a nil side is absent.
func (b *binder) and(l, r planner.Expr) (planner.Expr, error) {
	if l == nil {
		return r, nil
	}
	return b.call("and", l, r)
}

// isNotFound reports whether err is a NotFound error.
func isNotFound(err error) bool {
	var e *errs.Error
	return errors.As(err, &e) && e.Category == errs.NotFound
}
