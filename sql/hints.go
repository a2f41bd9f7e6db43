package sql

import (
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/internal/errs"
)

// TrainingHint returns the options of a SELECT's training hint, written where MySQL takes
// optimizer hints, right after SELECT:
//
//	SELECT /*+ TRAINING(seed=7, epoch=3, rank=0, world_size=2) */ a, b FROM dataset
//
// Names are returned in lower case; values may be quoted ('…' or "…"). It returns nil when the
// statement has no such hint, and errs.InvalidInput for a malformed one. Other hints are left
// alone. A query with INTERSECT or EXCEPT, which vitess cannot parse whole, has no hint.
//
// Only a statement that has an optimizer hint comment is parsed (within DefaultLimits), so
// every other statement costs a scan of its text here, not a second parse.
func TrainingHint(text string) (map[string]string, error) {
	if !strings.Contains(text, "/*+") {
		return nil, nil
	}
	if err := DefaultLimits.checkText(text); err != nil {
		return nil, err
	}
	if _, _, setOps := splitSetOps(text); setOps {
		return nil, nil
	}
	stmt, err := parse(text)
	if err != nil {
		return nil, err
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok || sel.Comments == nil {
		return nil, nil
	}
	for _, c := range sel.Comments.GetComments() {
		body, ok := strings.CutPrefix(c, "/*+")
		if !ok {
			continue
		}
		body = strings.TrimSuffix(body, "*/")
		at := strings.Index(strings.ToUpper(body), "TRAINING(")
		if at < 0 {
			continue
		}
		args := body[at+len("TRAINING("):]
		end := closingParen(args)
		if end < 0 {
			return nil, errs.Invalidf("TRAINING hint has no closing parenthesis")
		}
		return hintOptions(args[:end])
	}
	return nil, nil
}

// closingParen returns the index of the ')' that ends s, outside quotes (-1 for none).
func closingParen(s string) int {
	var quote byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ')':
			return i
		}
	}
	return -1
}

// hintOptions parses "name=value, name='value' …" (commas optional).
func hintOptions(s string) (map[string]string, error) {
	opts := map[string]string{}
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == ',' || s[i] == '\t' || s[i] == '\n') {
			i++
		}
	}
	for skip(); i < len(s); skip() {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return nil, errs.Invalidf("TRAINING hint: %q is not name=value", strings.TrimSpace(s[i:]))
		}
		name := strings.ToLower(strings.TrimSpace(s[i : i+eq]))
		if name == "" || strings.ContainsAny(name, " ,'\"") {
			return nil, errs.Invalidf("TRAINING hint: %q is not an option name", name)
		}
		i += eq + 1
		for i < len(s) && s[i] == ' ' {
			i++
		}
		var value string
		if i < len(s) && (s[i] == '\'' || s[i] == '"') {
			q := s[i]
			end := strings.IndexByte(s[i+1:], q)
			if end < 0 {
				return nil, errs.Invalidf("TRAINING hint: the value of %s has no closing quote", name)
			}
			value, i = s[i+1:i+1+end], i+2+end
		} else {
			j := i
			for j < len(s) && s[j] != ',' && s[j] != ' ' && s[j] != '\t' && s[j] != '\n' {
				j++
			}
			value, i = s[i:j], j
		}
		if _, dup := opts[name]; dup {
			return nil, errs.Invalidf("TRAINING hint names %s twice", name)
		}
		opts[name] = value
	}
	return opts, nil
}
