package sql

import (
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// MySQL names a result column that has no alias and is no plain column by the text of its
// expression as the statement writes it (`SELECT COUNT(*), 1+1, a <> b` gives the columns
// `COUNT(*)`, `1+1` and `a <> b`), and a string literal by its value (`SELECT 'abc'` gives
// `abc`). The parser keeps no positions, so the text of each item of a statement's first
// SELECT is found with the parser's tokenizer (writtenItems) and used for that SELECT's items
// (selectBlock.expandItems); other blocks name such columns by the parsed expression.

// writtenItems returns the text of each select item of the first SELECT of text at the
// outermost level (the one whose columns a query, or the first operand of a UNION, returns),
// from its first token to its last (spaces and comments around it left out), or nil when there
// is none (a statement that is not a query, or one whose first operand is parenthesized).
func writtenItems(text string) []string {
	p, err := newParser()
	if err != nil {
		return nil
	}
	tkn := p.NewStringTokenizer(text)
	depth := 0
	inList := false
	expectModifiers := false
	var items []string
	itemStart, itemEnd := -1, 0 // the item's first token's start, its last token's end
	prevEnd := 0
	first := true
	closeItem := func() {
		if itemStart >= 0 {
			items = append(items, text[itemStart:itemEnd])
		}
		itemStart = -1
	}
	for {
		typ, val := tkn.Scan()
		if typ == sqlparser.LEX_ERROR {
			return nil
		}
		if typ == sqlparser.COMMENT {
			prevEnd = tkn.Pos
			continue
		}
		start := prevEnd
		for start < len(text) && isSpace(text[start]) {
			start++
		}
		end := tkn.Pos
		prevEnd = end
		word := strings.ToLower(val)
		if first {
			// Only a query: SELECT …, or WITH … SELECT ….
			if word != "select" && word != "with" {
				return nil
			}
			first = false
		}
		if !inList {
			if typ == 0 || typ == ';' {
				return nil
			}
			switch {
			case typ == '(':
				depth++
			case typ == ')':
				depth--
			case depth == 0 && word == "select" && typ == sqlparser.SELECT:
				inList, expectModifiers = true, true
			}
			continue
		}
		if expectModifiers && depth == 0 && selectModifiers[word] {
			continue
		}
		expectModifiers = false
		if depth == 0 && (typ == 0 || typ == ';' || typ == ')' || selectListEnd[word] && isKeywordToken(typ)) {
			closeItem()
			return items
		}
		switch {
		case typ == '(':
			depth++
		case typ == ')':
			depth--
		case typ == ',' && depth == 0:
			closeItem()
			continue
		}
		if itemStart < 0 {
			itemStart = start
		}
		itemEnd = end
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// isKeywordToken tells a keyword from an identifier of the same letters (a backquoted `from`).
func isKeywordToken(typ int) bool { return typ != sqlparser.ID }

// selectModifiers may follow SELECT before its first item.
var selectModifiers = map[string]bool{
	"all": true, "distinct": true, "distinctrow": true, "high_priority": true, "straight_join": true,
	"sql_small_result": true, "sql_big_result": true, "sql_buffer_result": true, "sql_no_cache": true,
	"sql_cache": true, "sql_calc_found_rows": true,
}

// selectListEnd are the keywords that end a select list at its own level.
var selectListEnd = map[string]bool{
	"from": true, "into": true, "where": true, "group": true, "having": true, "window": true,
	"order": true, "limit": true, "union": true, "except": true, "intersect": true, "for": true,
	"lock": true,
}

// firstSelect returns the SELECT whose columns stmt returns: stmt itself, or the first operand
// of a set operation; nil for anything else.
func firstSelect(stmt sqlparser.Statement) *sqlparser.Select {
	switch s := stmt.(type) {
	case *sqlparser.Select:
		return s
	case *sqlparser.Union:
		return firstSelect(s.Left)
	}
	return nil
}

// writtenName is the name MySQL gives an unaliased select item that is not a plain column:
// a string literal's value, otherwise the item's text as written. ok is false when written does
// not read back as e (writtenMatches): the caller names the item by e then.
func writtenName(e sqlparser.Expr, written string) (name string, ok bool) {
	if l, isLit := e.(*sqlparser.Literal); isLit && l.Type == sqlparser.StrVal {
		return l.Val, true
	}
	return written, writtenMatches(written, e)
}

// writtenNameAt is writtenName of item i when written holds the items' texts (nil: none).
func writtenNameAt(written []string, i int, e sqlparser.Expr) (string, bool) {
	if written == nil {
		return "", false
	}
	return writtenName(e, written[i])
}

// writtenMatches reports whether text, an item as writtenItems found it, parses to the
// expression e the statement's parse gave that item (placeholders compared as ?): the check
// that the tokens were split where the parser split them.
func writtenMatches(text string, e sqlparser.Expr) bool {
	p, err := newParser()
	if err != nil {
		return false
	}
	stmt, err := p.Parse("SELECT " + text)
	if err != nil {
		return false
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok || len(sel.GetColumns()) != 1 {
		return false
	}
	item, ok := sel.GetColumns()[0].(*sqlparser.AliasedExpr)
	if !ok || !item.As.IsEmpty() {
		return false
	}
	return placeholdersAsWritten(sqlparser.String(item.Expr)) == placeholdersAsWritten(sqlparser.String(e))
}
