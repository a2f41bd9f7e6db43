package sql

import (
	"sync"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/internal/errs"
)

// mysqlVersion is the server version the parser accepts syntax for.
const mysqlVersion = "8.0.40"

// newParser builds the shared parser once; a vitess Parser is safe for concurrent use.
var newParser = sync.OnceValues(func() (*sqlparser.Parser, error) {
	return sqlparser.New(sqlparser.Options{MySQLServerVersion: mysqlVersion})
})

// parse turns text into one vitess statement. Syntax errors are errs.InvalidInput and keep
// vitess's message, which names the position and the token it stopped at.
func parse(text string) (sqlparser.Statement, error) {
	p, err := newParser()
	if err != nil {
		return nil, errs.Internalf("SQL parser: %v", err)
	}
	// ParseStrictDDL rejects a DDL statement vitess could only partly parse, where Parse would
	// silently return the part (and log a warning).
	stmt, err := p.ParseStrictDDL(text)
	if err != nil {
		return nil, &errs.Error{Category: errs.InvalidInput, Msg: "SQL syntax error", Err: err}
	}
	return stmt, nil
}
