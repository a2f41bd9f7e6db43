package slt

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/cachedb/cachedb/internal/errs"
)

// ParseFile reads and parses one test file.
func ParseFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errs.NotFoundf("cannot open test file %s: %v", path, err)
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse splits a test file into records. name is used only in record locations and errors.
// Records are separated by blank lines; lines starting with '#' outside a result section are
// comments. A malformed record makes the whole file fail to parse with an InvalidInput error
// naming the file and line, so a broken test is never silently half-run.
func Parse(r io.Reader, name string) ([]Record, error) {
	p := &parser{name: name, scanner: bufio.NewScanner(r)}
	p.scanner.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var records []Record
	for {
		rec, ok, err := p.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return records, nil
		}
		records = append(records, rec)
	}
}

type parser struct {
	name    string
	scanner *bufio.Scanner
	lineNo  int
}

func (p *parser) readLine() (string, bool, error) {
	if !p.scanner.Scan() {
		if err := p.scanner.Err(); err != nil {
			return "", false, errs.Invalidf("%s: reading line %d: %v", p.name, p.lineNo+1, err)
		}
		return "", false, nil
	}
	p.lineNo++
	return strings.TrimRight(p.scanner.Text(), "\r"), true, nil
}

func (p *parser) errorf(format string, args ...any) error {
	return errs.Invalidf("%s:%d: %s", p.name, p.lineNo, fmt.Sprintf(format, args...))
}

// next returns the next record, or ok=false at the end of the input.
func (p *parser) next() (rec Record, ok bool, err error) {
	rec.File = p.name
	for {
		line, more, err := p.readLine()
		if err != nil {
			return rec, false, err
		}
		if !more {
			if len(rec.Conditions) > 0 {
				return rec, false, p.errorf("conditions at the end of the file have no record")
			}
			return rec, false, nil
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" && len(rec.Conditions) > 0 {
			return rec, false, p.errorf("conditions are followed by a blank line instead of a record")
		}
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		fields := strings.Fields(stripComment(trimmed))
		switch fields[0] {
		case "skipif", "onlyif":
			if len(fields) < 2 {
				return rec, false, p.errorf("%s needs an engine name", fields[0])
			}
			rec.Conditions = append(rec.Conditions, Condition{Only: fields[0] == "onlyif", Engine: fields[1]})
			continue
		}
		rec.Line = p.lineNo
		err = p.parseCommand(&rec, fields)
		return rec, err == nil, err
	}
}

// stripComment removes a trailing "# comment" from a command line (`skipif mysql # reason`).
func stripComment(line string) string {
	if i := strings.Index(line, "#"); i >= 0 {
		return strings.TrimSpace(line[:i])
	}
	return line
}

func (p *parser) parseCommand(rec *Record, fields []string) error {
	switch fields[0] {
	case "statement":
		rec.Kind = KindStatement
		if len(fields) < 2 || (fields[1] != "ok" && fields[1] != "error") {
			return p.errorf("statement must be followed by ok or error")
		}
		rec.ExpectError = fields[1] == "error"
		sql, _, err := p.readSQL(false)
		if err != nil {
			return err
		}
		rec.SQL = sql
		return nil
	case "query":
		return p.parseQuery(rec, fields)
	case "hash-threshold":
		rec.Kind = KindHashThreshold
		if len(fields) != 2 {
			return p.errorf("hash-threshold needs one number")
		}
		n, err := strconv.Atoi(fields[1])
		if err != nil || n < 0 {
			return p.errorf("hash-threshold %q is not a non-negative number", fields[1])
		}
		rec.Threshold = n
		return nil
	case "halt":
		rec.Kind = KindHalt
		return nil
	default:
		return p.errorf("unknown command %q", fields[0])
	}
}

func (p *parser) parseQuery(rec *Record, fields []string) error {
	rec.Kind = KindQuery
	if len(fields) < 2 {
		return p.errorf("query needs its column types")
	}
	rec.Types = fields[1]
	for _, t := range rec.Types {
		if t != 'I' && t != 'R' && t != 'T' {
			return p.errorf("column type %q is not I, R or T", t)
		}
	}
	rest := fields[2:]
	if len(rest) > 0 {
		switch rest[0] {
		case "nosort":
			rec.Sort, rest = NoSort, rest[1:]
		case "rowsort":
			rec.Sort, rest = RowSort, rest[1:]
		case "valuesort":
			rec.Sort, rest = ValueSort, rest[1:]
		case "matches":
			rec.Sort, rest = Matches, rest[1:]
		}
	}
	if len(rest) > 0 {
		rec.Label, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		return p.errorf("unexpected %q after the query's label", strings.Join(rest, " "))
	}
	sql, hasResult, err := p.readSQL(true)
	if err != nil {
		return err
	}
	rec.SQL = sql
	if !hasResult {
		return nil
	}
	return p.readExpected(rec)
}

// readSQL reads SQL lines up to a blank line, the end of the input or (for queries) the
// `----` separator, which it reports with sawSeparator.
func (p *parser) readSQL(query bool) (sql string, sawSeparator bool, err error) {
	var lines []string
	for {
		line, more, err := p.readLine()
		if err != nil {
			return "", false, err
		}
		if !more || strings.TrimSpace(line) == "" {
			break
		}
		if query && strings.TrimSpace(line) == "----" {
			sawSeparator = true
			break
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return "", false, p.errorf("record has no SQL")
	}
	return strings.Join(lines, "\n"), sawSeparator, nil
}

// readExpected reads result lines up to a blank line or the end of the input.
func (p *parser) readExpected(rec *Record) error {
	rec.Expected = []string{}
	for {
		line, more, err := p.readLine()
		if err != nil {
			return err
		}
		if !more || line == "" {
			break
		}
		rec.Expected = append(rec.Expected, line)
	}
	if rec.Sort == Matches {
		for _, line := range rec.Expected {
			if _, err := regexp.Compile(line); err != nil {
				return p.errorf("expected line %q is not a regular expression: %v", line, err)
			}
		}
		return nil
	}
	if len(rec.Expected) == 1 {
		if h, ok := parseHashLine(rec.Expected[0]); ok {
			rec.ExpectedHash = &h
			rec.Expected = nil
		}
	}
	return nil
}

// parseHashLine recognizes `<n> values hashing to <32 hex digits>`.
func parseHashLine(line string) (Hashed, bool) {
	f := strings.Fields(line)
	if len(f) != 5 || f[1] != "values" || f[2] != "hashing" || f[3] != "to" || len(f[4]) != 32 {
		return Hashed{}, false
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 0 {
		return Hashed{}, false
	}
	return Hashed{Count: n, MD5: strings.ToLower(f[4])}, true
}
