package sql

import "strings"

// ANSIQuotes rewrites text as MySQL's ANSI_QUOTES mode reads it, for a parser of MySQL's
// default dialect: every double-quoted token outside single-quoted strings, backquoted
// identifiers and comments becomes the backquoted identifier of the same name (a doubled double
// quote inside stands for one, a backquote inside is doubled, and a backslash is an ordinary
// character, as in any identifier).
// Everything else is copied byte for byte, so the rewritten statement means what ANSI_QUOTES
// makes of the original.
//
// The lexing follows the parser's tokenizer (vitess): single-quoted strings take backslash
// escapes and doubled quotes; `-- ` (dash dash and a space, tab or line end), `#` and `//`
// comment to the end of the line, `/* … */` up to the first `*/`; the body of a versioned
// comment `/*! … */` is code, as MySQL runs it. It reports whether it changed anything. Text
// with an unterminated quote or comment is returned unchanged (false): the parser reports it.
func ANSIQuotes(text string) (string, bool) {
	if !strings.Contains(text, `"`) {
		return text, false
	}
	var out strings.Builder
	out.Grow(len(text) + 8)
	changed := false
	for i := 0; i < len(text); {
		c := text[i]
		end := i + 1 // the end of the token at i, copied unchanged unless rewritten
		switch {
		case c == '\'':
			end = endOfString(text, i)
		case c == '`':
			end = endOfBackquoted(text, i)
		case c == '"':
			name, next, ok := doubleQuoted(text, i)
			if !ok {
				return text, false
			}
			out.WriteString(quoteName(name))
			changed = true
			i = next
			continue
		case c == '#' || c == '/' && strings.HasPrefix(text[i:], "//") || isDashComment(text, i):
			end = endOfLine(text, i)
		case c == '/' && strings.HasPrefix(text[i:], "/*!"):
			end = i + 3 // a versioned comment's body is lexed as code
		case c == '/' && strings.HasPrefix(text[i:], "/*"):
			j := strings.Index(text[i+2:], "*/")
			if j < 0 {
				return text, false
			}
			end = i + 2 + j + 2
		}
		if end < 0 {
			return text, false
		}
		out.WriteString(text[i:end])
		i = end
	}
	if !changed {
		return text, false
	}
	return out.String(), true
}

// endOfString is the position after the single-quoted string starting at i (-1 when it does not
// end): a backslash escapes the next byte, a doubled quote stands for one.
func endOfString(text string, i int) int {
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			j++
		case '\'':
			if j+1 < len(text) && text[j+1] == '\'' {
				j++
				continue
			}
			return j + 1
		}
	}
	return -1
}

// endOfBackquoted is the position after the backquoted identifier starting at i (-1 when it does
// not end); a doubled backquote stands for one, and backslashes are ordinary.
func endOfBackquoted(text string, i int) int {
	for j := i + 1; j < len(text); j++ {
		if text[j] != '`' {
			continue
		}
		if j+1 < len(text) && text[j+1] == '`' {
			j++
			continue
		}
		return j + 1
	}
	return -1
}

// doubleQuoted reads the ANSI identifier starting at the double quote at i: its name (a doubled
// quote stands for one) and the position after it.
func doubleQuoted(text string, i int) (name string, next int, ok bool) {
	var b strings.Builder
	for j := i + 1; j < len(text); j++ {
		if text[j] != '"' {
			b.WriteByte(text[j])
			continue
		}
		if j+1 < len(text) && text[j+1] == '"' {
			b.WriteByte('"')
			j++
			continue
		}
		return b.String(), j + 1, true
	}
	return "", i, false
}

// isDashComment reports whether a `-- ` comment starts at i: two dashes and then a space, a
// tab, a line end or the end of the text.
func isDashComment(text string, i int) bool {
	if !strings.HasPrefix(text[i:], "--") {
		return false
	}
	if i+2 == len(text) {
		return true
	}
	switch text[i+2] {
	case ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// endOfLine is the position after the line comment starting at i, its newline included.
func endOfLine(text string, i int) int {
	j := strings.IndexByte(text[i:], '\n')
	if j < 0 {
		return len(text)
	}
	return i + j + 1
}
