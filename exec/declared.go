package exec

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// DeclaredTypeKey is the field metadata key under which a memory table's column keeps the SQL
// type its CREATE TABLE declared, where that type holds less than the engine's type for it:
// the integer types narrower than BIGINT and the unsigned ones (`tinyint`, `int unsigned`, …,
// `bigint unsigned`), and CHAR(n) and VARCHAR(n) (`char(5)`, `varchar(12)`). Values stored in
// such a column are checked as MySQL's strict mode checks them (CheckDeclared).
const DeclaredTypeKey = "cachedb.declared_type"

// integerRanges are the values each declared integer type holds.
var integerRanges = map[string][2]int64{
	"tinyint": {-128, 127}, "tinyint unsigned": {0, 255},
	"smallint": {-32768, 32767}, "smallint unsigned": {0, 65535},
	"mediumint": {-8388608, 8388607}, "mediumint unsigned": {0, 16777215},
	"int": {-2147483648, 2147483647}, "int unsigned": {0, 4294967295},
	"bigint unsigned": {0, 1<<63 - 1},
}

// declaredLength reads char(n) and varchar(n).
func declaredLength(decl string) (n int, isChar, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(decl, "char("):
		rest, isChar = decl[len("char("):], true
	case strings.HasPrefix(decl, "varchar("):
		rest = decl[len("varchar("):]
	default:
		return 0, false, false
	}
	if !strings.HasSuffix(rest, ")") {
		return 0, false, false
	}
	n, err := strconv.Atoi(rest[:len(rest)-1])
	return n, isChar, err == nil && n >= 0
}

// CheckDeclared checks the values a (already of the column's engine type) about to be stored in
// a column declared decl, rows numbered from firstRow for messages, as MySQL's strict mode
// does: an integer outside the declared type's range fails with "Out of range value for column
// 'c' at row n"; text longer than n characters fails with "Data too long for column 'c' at row
// n", except that spaces beyond n at the end are cut off (VARCHAR) and a CHAR keeps no trailing
// spaces at all (MySQL pads CHAR values and strips the padding when they are read). It returns
// the array to store: a itself (retained) or a new one. Other types are returned as they are.
func CheckDeclared(tc *TaskContext, a arrow.Array, decl, column string, firstRow int64) (arrow.Array, error) {
	if r, ok := integerRanges[decl]; ok {
		if ints, ok := a.(*array.Int64); ok {
			for i := range ints.Len() {
				if ints.IsValid(i) && (ints.Value(i) < r[0] || ints.Value(i) > r[1]) {
					return nil, errs.Invalidf("Out of range value for column '%s' at row %d", column, firstRow+int64(i))
				}
			}
		}
		a.Retain()
		return a, nil
	}
	n, isChar, ok := declaredLength(decl)
	text, isText := a.(*array.String)
	if !ok || !isText {
		a.Retain()
		return a, nil
	}
	changed := false
	for i := range text.Len() {
		if text.IsNull(i) {
			continue
		}
		s := text.Value(i)
		fitted, err := fitText(s, n, isChar)
		if err != nil {
			return nil, errs.Invalidf("Data too long for column '%s' at row %d", column, firstRow+int64(i))
		}
		changed = changed || len(fitted) != len(s)
	}
	if !changed {
		a.Retain()
		return a, nil
	}
	b := array.NewStringBuilder(tc.Alloc)
	defer b.Release()
	b.Reserve(text.Len())
	for i := range text.Len() {
		if text.IsNull(i) {
			b.AppendNull()
			continue
		}
		fitted, _ := fitText(text.Value(i), n, isChar)
		b.Append(fitted)
	}
	return b.NewArray(), nil
}

// fitText is s as a CHAR(n) (isChar) or VARCHAR(n) column stores it, or an error when it holds
// more than n characters besides trailing spaces.
func fitText(s string, n int, isChar bool) (string, error) {
	if isChar {
		s = strings.TrimRight(s, " ")
	}
	if utf8.RuneCountInString(s) <= n {
		return s, nil
	}
	trimmed := strings.TrimRight(s, " ")
	if utf8.RuneCountInString(trimmed) > n {
		return "", fmt.Errorf("too long")
	}
	// Only spaces lie beyond n characters: keep the first n.
	count := 0
	for i := range s {
		if count == n {
			return s[:i], nil
		}
		count++
	}
	return s, nil
}
