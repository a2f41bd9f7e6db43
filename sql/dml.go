package sql

import (
	"fmt"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// UPDATE and DELETE are bound by rewriting them into queries over the table — the rows that
// remain, the rows affected — which the engine runs before swapping the table's contents. The
// queries are written as SQL text and bound like any other query, so they get the same name
// resolution, typing and error messages.

// dmlTarget returns the table and alias of a single-table UPDATE or DELETE.
func (b *binder) dmlTarget(exprs []sqlparser.TableExpr, what string) (table, alias string, err error) {
	if len(exprs) != 1 {
		return "", "", errs.Unsupportedf("%s of several tables is not supported", what)
	}
	at, ok := exprs[0].(*sqlparser.AliasedTableExpr)
	if !ok {
		return "", "", errs.Unsupportedf("%s of a join is not supported", what)
	}
	tn, ok := at.Expr.(sqlparser.TableName)
	if !ok {
		return "", "", errs.Unsupportedf("%s of a derived table is not supported", what)
	}
	table, err = b.writableName(tn)
	return table, at.As.String(), err
}

// fromClause renders FROM table [AS alias].
func fromClause(table, alias string) string {
	s := " FROM " + sqlparser.String(sqlparser.NewIdentifierCS(table))
	if alias != "" {
		s += " AS " + sqlparser.String(sqlparser.NewIdentifierCS(alias))
	}
	return s
}

func (b *binder) delete(s *sqlparser.Delete) (planner.Statement, error) {
	if s.With != nil || len(s.OrderBy) > 0 || s.Limit != nil || len(s.Targets) > 0 {
		return nil, errs.Unsupportedf("DELETE with WITH, ORDER BY, LIMIT or several targets is not supported")
	}
	table, alias, err := b.dmlTarget(s.TableExprs, "DELETE")
	if err != nil {
		return nil, err
	}
	from := fromClause(table, alias)
	keep, deleted := "SELECT *"+from+" WHERE FALSE", "SELECT count(*)"+from
	if s.Where != nil {
		cond := sqlparser.String(s.Where.Expr)
		keep = fmt.Sprintf("SELECT *%s WHERE (%s) IS NOT TRUE", from, cond)
		deleted = fmt.Sprintf("SELECT count(*)%s WHERE (%s) IS TRUE", from, cond)
	}
	k, err := b.subQuery(keep)
	if err != nil {
		return nil, err
	}
	d, err := b.subQuery(deleted)
	if err != nil {
		return nil, err
	}
	return &planner.Delete{Table: table, Keep: k, Deleted: d}, nil
}

func (b *binder) update(s *sqlparser.Update) (planner.Statement, error) {
	if s.With != nil || len(s.OrderBy) > 0 || s.Limit != nil {
		return nil, errs.Unsupportedf("UPDATE with WITH, ORDER BY or LIMIT is not supported")
	}
	table, alias, err := b.dmlTarget(s.TableExprs, "UPDATE")
	if err != nil {
		return nil, err
	}
	t, err := b.cat.Table(b.ctx, table)
	if err != nil {
		if errs.CategoryOf(err) == errs.NotFound {
			return nil, &errs.Error{Category: errs.NotFound, Msg: "Table '" + table + "' doesn't exist", Err: err}
		}
		return nil, err
	}
	// The last assignment to a column wins, as when MySQL applies them left to right.
	assigned := map[string]string{}
	for _, ue := range s.Exprs {
		name := ue.Name.Name.String()
		if q := ue.Name.Qualifier.Name.String(); q != "" && !strings.EqualFold(q, table) && !strings.EqualFold(q, alias) {
			return nil, errs.NotFoundf("Unknown column '%s.%s' in 'field list'", q, name)
		}
		if !hasFieldFold(t, name) {
			return nil, errs.NotFoundf("Unknown column '%s' in 'field list'", name)
		}
		assigned[strings.ToLower(name)] = sqlparser.String(ue.Expr)
	}
	cond := "TRUE"
	if s.Where != nil {
		cond = sqlparser.String(s.Where.Expr)
	}
	cols := make([]string, t.Schema().NumFields())
	for i, f := range t.Schema().Fields() {
		col := sqlparser.String(sqlparser.NewIdentifierCI(f.Name))
		if e, ok := assigned[strings.ToLower(f.Name)]; ok {
			cols[i] = fmt.Sprintf("CASE WHEN (%s) IS TRUE THEN (%s) ELSE %s END AS %s", cond, e, col, col)
		} else {
			cols[i] = col
		}
	}
	from := fromClause(table, alias)
	contents, err := b.subQuery("SELECT " + strings.Join(cols, ", ") + from)
	if err != nil {
		return nil, err
	}
	matched, err := b.subQuery(fmt.Sprintf("SELECT count(*)%s WHERE (%s) IS TRUE", from, cond))
	if err != nil {
		return nil, err
	}
	return &planner.Update{Table: t.Name(), NewContents: contents, Matched: matched}, nil
}

func hasFieldFold(t catalog.Table, name string) bool {
	for _, f := range t.Schema().Fields() {
		if strings.EqualFold(f.Name, name) {
			return true
		}
	}
	return false
}

// subQuery binds the text of a generated SELECT with a fresh binder over the same catalog.
func (b *binder) subQuery(text string) (*planner.Query, error) {
	stmt, err := b.bindText(text)
	if err != nil {
		return nil, err
	}
	q, ok := stmt.(*planner.Query)
	if !ok {
		return nil, errs.Internalf("generated statement %q is not a query", text)
	}
	return q, nil
}
