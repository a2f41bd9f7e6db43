package sql

import (
	"strings"
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

// parse turns text into one vitess statement, its long AND, OR and UNION chains balanced
// (balanceChains). Syntax errors are errs.InvalidInput and keep
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
		// MySQL accepts an explicit ALL in aggregate calls (AVG(ALL x)); vitess does not. It
		// means the default, so drop it and try once more; the first error stands otherwise.
		if rewritten, ok := dropAggregateAll(text); ok {
			if stmt, err2 := p.ParseStrictDDL(rewritten); err2 == nil {
				return balanceChains(stmt), nil
			}
		}
		return nil, &errs.Error{Category: errs.InvalidInput, Msg: "SQL syntax error", Err: err}
	}
	return balanceChains(stmt), nil
}

// dropAggregateAll removes the keyword ALL where it directly follows the opening parenthesis of
// a call, outside quoted strings and identifiers: `AVG ( ALL col )` → `AVG (  col )`. It
// reports whether it changed anything.
func dropAggregateAll(text string) (string, bool) {
	var out strings.Builder
	changed := false
	var quote byte
	lastNonSpace := byte(0)
	for i := 0; i < len(text); i++ {
		c := text[i]
		if quote != 0 {
			out.WriteByte(c)
			if c == '\\' && quote != '`' && i+1 < len(text) {
				i++
				out.WriteByte(text[i])
			} else if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"', '`':
			quote = c
		}
		if lastNonSpace == '(' && (c == 'A' || c == 'a') && i+3 <= len(text) && strings.EqualFold(text[i:i+3], "ALL") &&
			(i+3 == len(text) || !isIdentByte(text[i+3])) {
			i += 2
			changed = true
			lastNonSpace = ' '
			out.WriteByte(' ')
			continue
		}
		out.WriteByte(c)
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			lastNonSpace = c
		}
	}
	return out.String(), changed
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
