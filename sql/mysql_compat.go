package sql

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// ServerVersion is what version() and @@version report: the MySQL version whose dialect cachedb
// speaks, marked as cachedb's.
const ServerVersion = mysqlVersion + "-cachedb"

// systemVariables are the @@variables MySQL drivers and tools read when they connect, with
// values that describe cachedb: autocommit, UTF-8, UTC, no transactions to isolate. Any other
// variable is unsupported.
var systemVariables = map[string]any{
	"version":                  ServerVersion,
	"version_comment":          "cachedb",
	"auto_increment_increment": int64(1),
	"autocommit":               int64(1),
	"character_set_client":     "utf8mb4",
	"character_set_connection": "utf8mb4",
	"character_set_results":    "utf8mb4",
	"character_set_server":     "utf8mb4",
	"collation_connection":     "utf8mb4_0900_ai_ci",
	"collation_server":         "utf8mb4_0900_ai_ci",
	"init_connect":             "",
	"interactive_timeout":      int64(28800),
	"license":                  "Apache-2.0",
	"lower_case_table_names":   int64(0),
	"max_allowed_packet":       int64(67108864),
	"net_buffer_length":        int64(16384),
	"net_write_timeout":        int64(60),
	"performance_schema":       int64(0),
	"query_cache_size":         int64(0),
	"query_cache_type":         "OFF",
	"sql_mode":                 DefaultSQLMode, // the session's, when it set one (WithSQLMode)
	"system_time_zone":         "UTC",
	"time_zone":                "SYSTEM",
	"transaction_isolation":    "REPEATABLE-READ",
	"tx_isolation":             "REPEATABLE-READ",
	"transaction_read_only":    int64(0),
	"tx_read_only":             int64(0),
	"wait_timeout":             int64(28800),
}

// systemVariable binds @@name (@@session.name, @@global.name) to its value.
func (b *binder) systemVariable(v *sqlparser.Variable) (planner.Expr, error) {
	if v.Scope != sqlparser.SessionScope && v.Scope != sqlparser.GlobalScope && v.Scope != sqlparser.NoScope {
		return nil, errs.Unsupportedf("user variable @%s is not supported", v.Name.String())
	}
	val, ok := systemVariables[v.Name.Lowered()]
	if !ok {
		return nil, errs.Unsupportedf("system variable @@%s is not supported", v.Name.String())
	}
	if v.Name.Lowered() == "sql_mode" && v.Scope != sqlparser.GlobalScope {
		val = sqlModeOf(b.ctx)
	}
	switch val := val.(type) {
	case int64:
		return &planner.Literal{Value: scalar.NewInt64Scalar(val)}, nil
	default:
		return textLiteral(val.(string)), nil
	}
}

// sessionFunction binds the functions that describe the connection: version(), database() and
// schema() (the current database, catalog.Set.CurrentDatabase), connection_id() (every call is
// its own connection to a stateless server: 0), user() and current_user().
func (b *binder) sessionFunction(e *sqlparser.FuncExpr) (planner.Expr, bool, error) {
	var v planner.Expr
	switch e.Name.Lowered() {
	case "version":
		v = textLiteral(ServerVersion)
	case "database", "schema":
		v = textLiteral(currentDatabase(b.cat))
	case "connection_id":
		v = &planner.Literal{Value: scalar.NewInt64Scalar(0)}
	case "user", "current_user", "session_user", "system_user":
		v = textLiteral("cachedb@%")
	default:
		return nil, false, nil
	}
	if len(e.Exprs) > 0 {
		return nil, true, errs.Invalidf("Incorrect parameter count in the call to native function '%s'", e.Name.String())
	}
	return v, true, nil
}

func textLiteral(s string) planner.Expr {
	return &planner.Literal{Value: scalar.NewStringScalar(s)}
}

func currentDatabase(cat catalog.Catalog) string {
	if s, ok := cat.(interface{ CurrentDatabase() string }); ok {
		return s.CurrentDatabase()
	}
	return cat.Name()
}

// UseDatabase reports the database a USE statement names ("" and false for any other text).
func UseDatabase(text string) (string, bool) {
	stmt, err := parse(text)
	if err != nil {
		return "", false
	}
	u, ok := stmt.(*sqlparser.Use)
	if !ok {
		return "", false
	}
	return u.DBName.String(), true
}

// quoteString writes s as a MySQL string literal.
func quoteString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

func quoteName(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// show binds the SHOW statements MySQL users and tools type: SHOW DATABASES | SCHEMAS, SHOW
// [FULL] TABLES [FROM db] [LIKE …], SHOW COLUMNS FROM t [FROM db] [LIKE … | WHERE …] and SHOW
// CREATE TABLE t, with MySQL's result shapes. Databases and tables come from information_schema.
func (b *binder) show(s *sqlparser.Show, text string) (planner.Statement, error) {
	switch s := s.Internal.(type) {
	case *sqlparser.ShowBasic:
		switch s.Command {
		case sqlparser.Database, sqlparser.Keyspace:
			q := "SELECT SCHEMA_NAME AS `Database` FROM information_schema.schemata" + showFilter(s.Filter, "SCHEMA_NAME") + " ORDER BY 1"
			return b.bindText(q)
		case sqlparser.Table:
			db := s.DbName.String()
			if db == "" {
				db = currentDatabase(b.cat)
			} else if set, ok := b.cat.(interface {
				Database(context.Context, string) (string, bool)
			}); ok {
				// As USE reads it: a database SHOW DATABASES lists, or a namespace of the
				// current catalog.
				named, found := set.Database(b.ctx, db)
				if !found {
					return nil, errs.NotFoundf("Unknown database '%s'", db)
				}
				db = named
			}
			cols := "TABLE_NAME AS " + quoteName("Tables_in_"+db)
			if s.Full {
				cols += ", TABLE_TYPE AS `Table_type`"
			}
			where := " WHERE TABLE_SCHEMA = " + quoteString(db)
			if f := showFilter(s.Filter, "TABLE_NAME"); f != "" {
				where += " AND" + strings.TrimPrefix(f, " WHERE")
			}
			return b.bindText("SELECT " + cols + " FROM information_schema.tables" + where + " ORDER BY 1")
		case sqlparser.Column:
			tn := s.Tbl
			if !s.DbName.IsEmpty() {
				tn.Qualifier = s.DbName
			}
			if s.Filter != nil {
				return b.describeFiltered(tn, s.Filter)
			}
			return b.describe(tn)
		}
	case *sqlparser.ShowCreate:
		if s.Command == sqlparser.CreateTbl {
			return b.showCreateTable(s.Op)
		}
	}
	return nil, errs.Unsupportedf("statement %s is not supported", strings.ToUpper(sqlparser.String(s)))
}

// showFilter is the WHERE clause of SHOW … LIKE 'p' (on column) or SHOW … WHERE cond.
func showFilter(f *sqlparser.ShowFilter, column string) string {
	switch {
	case f == nil:
		return ""
	case f.Filter != nil:
		return " WHERE " + sqlparser.String(f.Filter)
	}
	return " WHERE " + column + " LIKE " + quoteString(f.Like)
}

// describeColumns are the columns of DESCRIBE t and SHOW COLUMNS FROM t.
var describeColumns = []string{"Field", "Type", "Null", "Key", "Default", "Extra"}

// describe binds DESCRIBE t / SHOW COLUMNS FROM t: one row per column of t, typed as queries
// return it.
func (b *binder) describe(tn sqlparser.TableName) (planner.Statement, error) {
	rows, err := b.describeRows(tn)
	if err != nil {
		return nil, err
	}
	return b.textRows(describeColumns, rows), nil
}

// describeRows are the rows of DESCRIBE t (nil is NULL).
func (b *binder) describeRows(tn sqlparser.TableName) ([][]*string, error) {
	tbl, err := b.cat.Table(b.ctx, tableName(tn))
	if err != nil {
		return nil, err
	}
	var rows [][]*string
	for _, f := range tbl.Schema().Fields() {
		_, columnType := catalog.MySQLType(f.Type)
		null := map[bool]string{true: "YES", false: "NO"}[f.Nullable]
		empty := ""
		rows = append(rows, []*string{&f.Name, &columnType, &null, &empty, nil, &empty})
	}
	return rows, nil
}

// describeFiltered binds SHOW COLUMNS FROM t LIKE 'p' (on Field) and SHOW COLUMNS FROM t WHERE
// cond, whose condition names the result's columns (Field, Type, `Null`, `Key`, `Default`,
// Extra): DESCRIBE's rows as a derived table, filtered, in column order.
func (b *binder) describeFiltered(tn sqlparser.TableName, f *sqlparser.ShowFilter) (planner.Statement, error) {
	rows, err := b.describeRows(tn)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(describeColumns))
	for i, n := range describeColumns {
		names[i] = quoteName(n)
	}
	var q strings.Builder
	q.WriteString("SELECT " + strings.Join(names, ", ") + " FROM (")
	for i, r := range rows {
		if i > 0 {
			q.WriteString(" UNION ALL ")
		}
		fmt.Fprintf(&q, "SELECT %d AS `ordinal`", i)
		for j, v := range r {
			value := "CAST(NULL AS CHAR)"
			if v != nil {
				value = quoteString(*v)
			}
			q.WriteString(", " + value + " AS " + names[j])
		}
	}
	q.WriteString(") AS `columns`" + showFilter(f, "`Field`") + " ORDER BY `ordinal`")
	return b.bindText(q.String())
}

// showCreateTable binds SHOW CREATE TABLE t: the table's name and a CREATE TABLE statement
// that makes a table of the same columns.
func (b *binder) showCreateTable(tn sqlparser.TableName) (planner.Statement, error) {
	tbl, err := b.cat.Table(b.ctx, tableName(tn))
	if err != nil {
		return nil, err
	}
	var cols []string
	for _, f := range tbl.Schema().Fields() {
		_, columnType := catalog.MySQLType(f.Type)
		c := "  " + quoteName(f.Name) + " " + columnType
		if !f.Nullable {
			c += " NOT NULL"
		}
		cols = append(cols, c)
	}
	name := tn.Name.String()
	ddl := "CREATE TABLE " + quoteName(name) + " (\n" + strings.Join(cols, ",\n") + "\n)"
	return b.textRows([]string{"Table", "Create Table"}, [][]*string{{&name, &ddl}}), nil
}

// textRows is a query of constant text rows (nil is NULL) under the given column names.
func (b *binder) textRows(names []string, rows [][]*string) *planner.Query {
	cols := make([]planner.Column, len(names))
	for i, n := range names {
		cols[i] = planner.Column{ID: b.newID(), Name: n, Type: arrow.BinaryTypes.String, Nullable: true}
	}
	values := &planner.Values{Columns: cols}
	for _, r := range rows {
		row := make([]planner.Expr, len(r))
		for i, v := range r {
			if v == nil {
				row[i] = &planner.Literal{Value: scalar.MakeNullScalar(arrow.BinaryTypes.String)}
			} else {
				row[i] = textLiteral(*v)
			}
		}
		values.Rows = append(values.Rows, row)
	}
	return &planner.Query{Plan: values}
}
