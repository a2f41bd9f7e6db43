package engine

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/sql"
)

// NormalizeSQLMode reads a value of sql_mode as MySQL 8 stores it (sql.NormalizeSQLMode).
func NormalizeSQLMode(value string) (string, error) { return sql.NormalizeSQLMode(value) }

// sessionSQLMode reads SET [SESSION] sql_mode = value in session s: the mode the session has
// after it, normalized (sql.NormalizeSQLMode; nil for DEFAULT, the server's). The value is a
// literal list of modes or an expression evaluated as MySQL does in the session, such as
// CONCAT(@@sql_mode, ',ANSI_QUOTES') or a SELECT of REPLACE(@@sql_mode, 'ONLY_FULL_GROUP_BY',
// the empty string), clients' way to change one mode. A mode MySQL 8 does not know, or NULL, is
// refused in MySQL's words; SET GLOBAL sql_mode is refused: the server reads MySQL's default
// dialect.
func (e *Engine) sessionSQLMode(s Session, a sql.SessionAssignment) (*string, error) {
	if a.Global {
		return nil, errs.Unsupportedf("SET GLOBAL sql_mode: the server reads MySQL's default dialect; SET SESSION sql_mode sets this session's")
	}
	if a.Default {
		return nil, nil
	}
	value := a.Value
	if a.Expression {
		v, err := e.evalText(WithSession(context.Background(), Session{SQLMode: s.SQLMode}), a.Value)
		if err != nil {
			return nil, errs.Invalidf("SET sql_mode = %s: %v", a.Value, err)
		}
		if v == nil {
			return nil, errs.Invalidf("Variable 'sql_mode' can't be set to the value of 'NULL'")
		}
		value = *v
	}
	mode, err := sql.NormalizeSQLMode(value)
	if err != nil {
		return nil, err
	}
	return &mode, nil
}

// evalText evaluates the constant expression expr (SELECT expr) in ctx and returns its value as
// text, nil for NULL.
func (e *Engine) evalText(ctx context.Context, expr string) (*string, error) {
	res, err := e.Execute(ctx, "SELECT "+expr, nil)
	if err != nil {
		return nil, err
	}
	if res.Reader == nil {
		return nil, errs.Invalidf("the value is not an expression")
	}
	defer res.Reader.Release()
	var out *string
	rows := 0
	for res.Reader.Next() {
		b := res.Reader.RecordBatch()
		if b.NumCols() != 1 {
			return nil, errs.Invalidf("the value has %d columns; it must have one", b.NumCols())
		}
		for r := range int(b.NumRows()) {
			if rows++; rows > 1 {
				return nil, errs.Invalidf("the value has more than one row")
			}
			if col := b.Column(0); col.IsValid(r) {
				v := col.ValueStr(r)
				if s, ok := col.(*array.String); ok {
					v = s.Value(r)
				}
				out = &v
			}
		}
	}
	return out, res.Reader.Err()
}
