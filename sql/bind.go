package sql

import (
	"context"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// Bind parses one SQL statement and binds it against cat. params, when non-nil, are the
// values of the ? placeholders, substituted as typed literals; when nil, placeholders bind as
// planner.Param with type arrow.Null.
//
// Errors are categorized: syntax and type errors are errs.InvalidInput (a syntax error names the
// position vitess stopped at), unknown tables and columns errs.NotFound, valid SQL cachedb does
// not implement errs.Unsupported.
//
// The statement must be within the Limits ctx carries (WithLimits; DefaultLimits otherwise):
// errs.ResourceExhausted otherwise. Binding stops with ctx's error when ctx ends.
func Bind(ctx context.Context, text string, cat catalog.Catalog, params []scalar.Scalar) (planner.Statement, error) {
	return (&binder{ctx: ctx, cat: cat, params: params}).bindText(text)
}

// bindText binds text with a fresh binder that shares b's catalog, parameter values and
// parameter types; the placeholder hints it gathers are added to b's.
func (b *binder) bindText(text string) (planner.Statement, error) {
	nb := &binder{ctx: b.ctx, cat: b.cat, params: b.params, paramTypes: b.paramTypes, limits: limitsOf(b.ctx)}
	defer func() {
		for i, t := range nb.paramHints {
			b.hintParam(i, t)
		}
	}()
	return nb.bind(text)
}

// bind parses text and binds it with b, a binder not used before.
func (b *binder) bind(text string) (planner.Statement, error) {
	if err := b.limits.checkText(text); err != nil {
		return nil, err
	}
	stmt, err := parse(text)
	if err != nil {
		if q, ok, serr := b.setOperation(text); ok {
			return q, serr
		}
		if st, ok, terr := b.trigger(text); ok {
			return st, terr
		}
		if kind := unsupportedPrefix(text); kind != "" {
			return nil, errs.Unsupportedf("statement %s is not supported", kind)
		}
		return nil, err
	}
	return b.statement(stmt, text)
}

// binder holds the state of binding one statement: the column ID allocator (IDs are unique
// within the statement) and the placeholders seen so far.
type binder struct {
	ctx    context.Context
	cat    catalog.Catalog
	params []scalar.Scalar
	// paramTypes, when binding without values, type the placeholders (arrow.Null beyond it);
	// paramHints collects types the syntax gives placeholders (LIMIT ?), for InferParamTypes.
	paramTypes []arrow.DataType
	paramHints map[int]arrow.DataType
	lastID     planner.ColumnID
	numParams  int
	viewDepth  int       // nesting of view expansions in progress
	ctes       []*cte    // common table expressions in scope, innermost last
	now        time.Time // statement time, fixed at first use (statementTime)
	// wide maps each cast widenQuotients made back to the full-precision value it narrows.
	wide    map[*planner.Cast]planner.Expr
	limits  Limits
	nodes   int // expressions and query blocks bound so far (Limits.MaxPlanSize)
	depth   int // nesting of expressions and query blocks being bound (Limits.MaxNestingDepth)
	queries int // nesting of query blocks being bound (maxQueryNesting)
	// writtenItems are the texts of writtenSel's select items as the statement writes them,
	// which name its unaliased computed columns as MySQL does (item_names.go).
	writtenSel   *sqlparser.Select
	writtenItems []string
}

// newID allocates a column ID never handed out before in this statement.
func (b *binder) newID() planner.ColumnID {
	b.lastID++
	return b.lastID
}

// hintParam records a type the syntax gives placeholder i; the first hint wins.
func (b *binder) hintParam(i int, t arrow.DataType) {
	if b.paramHints == nil {
		b.paramHints = map[int]arrow.DataType{}
	}
	if _, ok := b.paramHints[i]; !ok {
		b.paramHints[i] = t
	}
}

// BindPrepare binds a statement to be run later with parameter values, as Bind with nil params
// does, and returns the type of each ? placeholder (planner.InferParamTypes). The statement
// returned is bound with its placeholders so typed, so its result schema is the one a run with
// values of those types produces; a run must therefore convert its values to these types.
func BindPrepare(ctx context.Context, text string, cat catalog.Catalog) (planner.Statement, []arrow.DataType, error) {
	b := &binder{ctx: ctx, cat: cat}
	stmt, err := b.bindText(text)
	if err != nil {
		return nil, nil, err
	}
	n := planner.NumParams(stmt)
	if n == 0 {
		return stmt, nil, nil
	}
	types := planner.InferParamTypes(stmt, n, b.paramHints)
	typed, err := (&binder{ctx: ctx, cat: cat, paramTypes: types}).bindText(text)
	if err != nil {
		// The statement binds untyped but not typed (a placeholder's default type does not fit
		// where it stands): report the untyped binding, whose parameters read as NULL.
		return stmt, types, nil
	}
	return typed, types, nil
}

// statement dispatches on the statement kind.
func (b *binder) statement(stmt sqlparser.Statement, text string) (planner.Statement, error) {
	switch s := stmt.(type) {
	case sqlparser.TableStatement:
		if sel := firstSelect(s); sel != nil {
			if items := writtenItems(text); len(items) == len(sel.GetColumns()) {
				b.writtenSel, b.writtenItems = sel, items
			}
		}
		return b.query(s)
	case *sqlparser.ExplainStmt:
		return b.explain(s)
	case *sqlparser.CreateTable:
		return b.createTable(s)
	case *sqlparser.Insert:
		return b.insert(s)
	case *sqlparser.DropTable:
		return b.dropTable(s)
	case *sqlparser.Set:
		return &planner.Set{Text: text}, nil
	case *sqlparser.Use, *sqlparser.Begin, *sqlparser.Commit, *sqlparser.Rollback:
		// USE changes the session, which the server keeps (engine.UseSession); transaction
		// statements are accepted with autocommit semantics: every statement commits itself.
		return &planner.Set{Text: text}, nil
	case *sqlparser.Show:
		return b.show(s, text)
	case *sqlparser.ExplainTab:
		return b.describe(s.Table)
	case *sqlparser.Update:
		return b.update(s)
	case *sqlparser.Delete:
		return b.delete(s)
	case *sqlparser.CreateView:
		return b.createView(s)
	case *sqlparser.DropView:
		return b.dropView(s), nil
	case *sqlparser.AlterTable:
		if st, ok, err := b.indexDDL(s); ok || err != nil {
			return st, err
		}
	}
	kind := unsupportedPrefix(text)
	if kind == "" {
		kind = statementKind(stmt)
	}
	return nil, errs.Unsupportedf("statement %s is not supported", kind)
}

// query binds a SELECT or UNION as a top-level query.
func (b *binder) query(ts sqlparser.TableStatement) (*planner.Query, error) {
	p, err := b.tableStatement(ts, nil)
	if err != nil {
		return nil, err
	}
	return &planner.Query{Plan: p, NumParams: b.numParams}, nil
}

// explain binds EXPLAIN [ANALYZE] of a query; EXPLAIN of anything else is unsupported.
func (b *binder) explain(s *sqlparser.ExplainStmt) (planner.Statement, error) {
	ts, ok := s.Statement.(sqlparser.TableStatement)
	if !ok {
		return nil, errs.Unsupportedf("EXPLAIN of %s is not supported", statementKind(s.Statement))
	}
	q, err := b.query(ts)
	if err != nil {
		return nil, err
	}
	return &planner.Explain{Query: q, Analyze: s.Type == sqlparser.AnalyzeType, SQL: sqlparser.String(ts)}, nil
}

// statementKind names a statement for error messages ("UPDATE", "CREATE VIEW", …).
func statementKind(stmt sqlparser.Statement) string {
	switch s := stmt.(type) {
	case *sqlparser.Update:
		return "UPDATE"
	case *sqlparser.Delete:
		return "DELETE"
	case *sqlparser.Insert:
		if s.Action == sqlparser.ReplaceAct {
			return "REPLACE"
		}
		return "INSERT"
	case *sqlparser.CreateView:
		return "CREATE VIEW"
	case *sqlparser.DropView:
		return "DROP VIEW"
	case *sqlparser.AlterTable:
		return "ALTER TABLE"
	case *sqlparser.TruncateTable:
		return "TRUNCATE TABLE"
	case *sqlparser.ExplainTab:
		return "DESCRIBE"
	case *sqlparser.Show:
		return "SHOW"
	case *sqlparser.Begin:
		return "BEGIN"
	case *sqlparser.Commit:
		return "COMMIT"
	case *sqlparser.Rollback:
		return "ROLLBACK"
	case *sqlparser.Use:
		return "USE"
	}
	return strings.ToUpper(sqlparser.ASTToStatementType(stmt).String())
}

// unsupportedStatements are statement openings that cachedb does not implement; some of them
// vitess cannot parse either, and the client deserves "unsupported" rather than a syntax error.
var unsupportedStatements = []string{
	"CREATE TRIGGER", "DROP TRIGGER", "REINDEX", "INSERT OR REPLACE",
}

// unsupportedPrefix returns the statement kind text opens with when it is one cachedb does not
// implement, or "".
func unsupportedPrefix(text string) string {
	words := strings.Join(strings.Fields(strings.ToUpper(text)), " ")
	for _, kind := range unsupportedStatements {
		if words == kind || strings.HasPrefix(words, kind+" ") {
			return kind
		}
	}
	return ""
}
