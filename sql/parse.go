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
		// Nor does it take three-part names (catalog.schema.table, as Flight SQL metadata lists
		// tables): quote the first two parts as one qualifier, `catalog.schema`.table, which
		// names the same table (catalog.Set).
		rewritten, dropped := dropAggregateAll(text)
		rewritten, merged := mergeThreePartNames(rewritten)
		if dropped || merged {
			if stmt, err2 := p.ParseStrictDDL(rewritten); err2 == nil {
				return balanceChains(stmt), nil
			}
		}
		// Clients written for ANSI SQL (pandas' read_sql_table and to_sql, for one) quote names
		// in double quotes, which MySQL's default dialect reads as strings: DROP TABLE "t" does
		// not parse. A statement that does not parse is read once more as under ANSI_QUOTES,
		// and that reading is used only if it parses; every statement MySQL accepts keeps
		// MySQL's meaning.
		if ansi, ok := ANSIQuotes(text); ok {
			ansi, _ = dropAggregateAll(ansi)
			ansi, _ = mergeThreePartNames(ansi)
			if stmt, err2 := p.ParseStrictDDL(ansi); err2 == nil {
				return balanceChains(stmt), nil
			}
		}
		// Standard texts (the TPC-H queries as printed, say) spell an interval's precision
		// and a row limit as MySQL does not; read them once more with MySQL's spellings.
		if std, ok := standardSQL(p, text); ok {
			std, _ = dropAggregateAll(std)
			std, _ = mergeThreePartNames(std)
			if stmt, err2 := p.ParseStrictDDL(std); err2 == nil {
				return balanceChains(stmt), nil
			}
			if ansi, ok := ANSIQuotes(std); ok {
				if stmt, err2 := p.ParseStrictDDL(ansi); err2 == nil {
					return balanceChains(stmt), nil
				}
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

// mergeThreePartNames rewrites each dotted name of three or more parts outside quoted strings
// and comments, a.b.c, as `a.b`.c (each part bare or quoted): vitess parses two-part names only.
// It reports whether it changed anything.
func mergeThreePartNames(text string) (string, bool) {
	var out strings.Builder
	changed := false
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\'' || c == '"':
			j := min(skipQuoted(text, i)+1, len(text))
			out.WriteString(text[i:j])
			i = j
		case c == '-' && strings.HasPrefix(text[i:], "-- ") || c == '#':
			j := strings.IndexByte(text[i:], '\n')
			if j < 0 {
				j = len(text) - i
			}
			out.WriteString(text[i : i+j])
			i += j
		case c == '/' && strings.HasPrefix(text[i:], "/*"):
			j := strings.Index(text[i+2:], "*/")
			end := len(text)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			out.WriteString(text[i:end])
			i = end
		case c == '`' || isIdentStart(c) && (i == 0 || !isIdentByte(text[i-1]) && text[i-1] != '@' && text[i-1] != '.'):
			var parts, raws []string
			j := i
			for {
				name, raw, next, ok := identPart(text, j)
				if !ok {
					break
				}
				parts, raws = append(parts, name), append(raws, raw)
				j = next
				if j >= len(text) || text[j] != '.' {
					break
				}
				j++
			}
			if len(parts) == 0 {
				out.WriteByte(c)
				i++
				continue
			}
			end := i
			for k, r := range raws {
				end += len(r)
				if k > 0 {
					end++
				}
			}
			if len(parts) >= 3 {
				out.WriteString("`" + strings.ReplaceAll(parts[0]+"."+parts[1], "`", "``") + "`")
				for _, r := range raws[2:] {
					out.WriteString("." + r)
				}
				changed = true
			} else {
				out.WriteString(text[i:end])
			}
			i = end
		default:
			out.WriteByte(c)
			i++
		}
	}
	return out.String(), changed
}

func isIdentStart(c byte) bool {
	return isIdentByte(c) && !(c >= '0' && c <= '9')
}

// identPart reads one identifier at i: bare, or quoted with backquotes (a doubled backquote inside stands for
// one). It returns the name, its text as written and the position after it.
func identPart(text string, i int) (name, raw string, next int, ok bool) {
	if i >= len(text) {
		return "", "", i, false
	}
	if text[i] == '`' {
		var b strings.Builder
		for j := i + 1; j < len(text); j++ {
			if text[j] != '`' {
				b.WriteByte(text[j])
				continue
			}
			if j+1 < len(text) && text[j+1] == '`' {
				b.WriteByte('`')
				j++
				continue
			}
			return b.String(), text[i : j+1], j + 1, true
		}
		return "", "", i, false
	}
	if !isIdentStart(text[i]) {
		return "", "", i, false
	}
	j := i
	for j < len(text) && isIdentByte(text[j]) {
		j++
	}
	return text[i:j], text[i:j], j, true
}
