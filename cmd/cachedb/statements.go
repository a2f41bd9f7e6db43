package main

import "strings"

// splitStatements cuts SQL text into statements. When the text contains a ';' outside quotes
// and comments, statements end at each such ';' and may span lines; otherwise each non-empty
// line is one statement. Empty statements are dropped.
func splitStatements(text string) []string {
	if !hasTerminator(text) {
		return splitLines(text)
	}
	return splitAtSemicolons(text)
}

// splitLines cuts text into one statement per non-blank line.
func splitLines(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if s := strings.TrimSpace(line); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// splitAtSemicolons cuts text at each ';' outside quotes and comments; a statement may span
// lines, and empty ones are dropped.
func splitAtSemicolons(text string) []string {
	var out []string
	start := 0
	scanSQL(text, func(i int) {
		if s := strings.TrimSpace(text[start:i]); s != "" {
			out = append(out, s)
		}
		start = i + 1
	})
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

func hasTerminator(text string) bool {
	found := false
	scanSQL(text, func(int) { found = true })
	return found
}

// scanSQL calls onSemicolon with the index of every ';' that is outside a quoted string or
// identifier ('...', "...", `...`, with doubled or backslash-escaped quotes) and outside a
// comment (-- or # to end of line, /* ... */).
func scanSQL(text string, onSemicolon func(int)) {
	walkSQL(text, func(i int) {
		if text[i] == ';' {
			onSemicolon(i)
		}
	})
}

// walkSQL calls visit with the index of every byte of text that is outside a quoted string or
// identifier and outside a comment, in order. An unterminated quote or /* comment hides the
// rest of the text.
func walkSQL(text string, visit func(int)) {
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\'' || c == '"' || c == '`':
			for i++; i < len(text); i++ {
				if text[i] == '\\' && c != '`' {
					i++
				} else if text[i] == c {
					if i+1 < len(text) && text[i+1] == c {
						i++
						continue
					}
					break
				}
			}
		case c == '#' || (c == '-' && strings.HasPrefix(text[i:], "-- ")):
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(text[i:], "/*"):
			end := strings.Index(text[i+2:], "*/")
			if end < 0 {
				return
			}
			i += end + 3
		default:
			visit(i)
		}
	}
}
