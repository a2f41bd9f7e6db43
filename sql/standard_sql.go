package sql

import (
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// standardSQL rewrites the SQL-standard spellings that MySQL's dialect lacks, and that
// standard texts (the TPC-H queries as its specification prints them, tools written for ANSI
// SQL) use, into MySQL's:
//
//   - an interval's leading field precision: INTERVAL '90' DAY (3) → INTERVAL '90' DAY;
//   - the standard row limit: [OFFSET m {ROW|ROWS}] [FETCH {FIRST|NEXT} [n] {ROW|ROWS} ONLY]
//     → LIMIT n OFFSET m (n defaults to 1; without FETCH, LIMIT 18446744073709551615 OFFSET m,
//     as MySQL's manual spells "all rows from m").
//
// Neither spelling parses in MySQL's dialect, so a caller tries the rewritten text only after
// the original failed to parse: every statement MySQL accepts keeps its meaning. Tokens are
// read by the parser's own tokenizer, so nothing inside strings, quoted names or comments is
// touched. It reports whether it changed anything.
func standardSQL(p *sqlparser.Parser, text string) (string, bool) {
	toks := standardTokens(p, text)
	var out strings.Builder
	copied := 0 // text[:copied] is written (rewritten where it had to be)
	for i := 0; i < len(toks); i++ {
		if n := intervalPrecision(toks, i); n > 0 {
			// Keep INTERVAL, the value and the unit; drop "( digits )".
			out.WriteString(text[copied:toks[i+2].end])
			copied = toks[i+2+n].end
			i += 2 + n
			continue
		}
		if limit, n := rowLimit(toks, i); n > 0 {
			start := 0
			if i > 0 {
				start = toks[i-1].end
			}
			out.WriteString(text[copied:start])
			out.WriteString(limit)
			copied = toks[i+n-1].end
			i += n - 1
		}
	}
	if copied == 0 {
		return text, false
	}
	out.WriteString(text[copied:])
	return out.String(), true
}

// stdToken is one token of a statement: its type, its text (lower-cased for words) and where
// it ends in the statement.
type stdToken struct {
	typ int
	val string
	end int
}

func standardTokens(p *sqlparser.Parser, text string) []stdToken {
	tkn := p.NewStringTokenizer(text)
	var toks []stdToken
	for {
		typ, val := tkn.Scan()
		if typ == 0 || typ == sqlparser.LEX_ERROR {
			return toks
		}
		if typ == sqlparser.COMMENT {
			continue
		}
		toks = append(toks, stdToken{typ: typ, val: strings.ToLower(val), end: tkn.Pos})
	}
}

// intervalUnits are the units an interval's leading field precision may follow.
var intervalUnits = map[string]bool{"year": true, "month": true, "day": true, "hour": true, "minute": true, "second": true}

// intervalPrecision matches INTERVAL value unit ( digits ) at toks[i], returning how many
// tokens the precision takes (3) or 0.
func intervalPrecision(toks []stdToken, i int) int {
	if i+5 >= len(toks) || toks[i].val != "interval" || !intervalUnits[toks[i+2].val] {
		return 0
	}
	if toks[i+3].typ != '(' || toks[i+4].typ != sqlparser.INTEGRAL || toks[i+5].typ != ')' {
		return 0
	}
	return 3
}

// rowLimit matches the standard row limit at toks[i] (see standardSQL), returning MySQL's
// LIMIT clause (with a leading space) and how many tokens it replaces, or 0.
func rowLimit(toks []stdToken, i int) (string, int) {
	at := i
	offset := ""
	if at+2 < len(toks) && toks[at].val == "offset" && toks[at+1].typ == sqlparser.INTEGRAL && isRowWord(toks[at+2].val) {
		offset = toks[at+1].val
		at += 3
	}
	count := ""
	if at+1 < len(toks) && toks[at].val == "fetch" && (toks[at+1].val == "first" || toks[at+1].val == "next") {
		j := at + 2
		count = "1"
		if j < len(toks) && toks[j].typ == sqlparser.INTEGRAL {
			count = toks[j].val
			j++
		}
		if j+1 >= len(toks) || !isRowWord(toks[j].val) || toks[j+1].val != "only" {
			return "", 0
		}
		at = j + 2
	}
	switch {
	case count == "" && offset == "":
		return "", 0
	case count == "":
		return " LIMIT 18446744073709551615 OFFSET " + offset, at - i
	case offset == "":
		return " LIMIT " + count, at - i
	}
	return " LIMIT " + count + " OFFSET " + offset, at - i
}

func isRowWord(s string) bool { return s == "row" || s == "rows" }
