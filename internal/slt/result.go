package slt

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Result is a query's formatted values, row by row, before any sort mode is applied.
type Result struct {
	Columns int
	Rows    [][]string
}

// Values returns the result's values in the order the sort mode requires: rows as returned
// (nosort), rows sorted by their values compared left to right as strings (rowsort), or all
// values sorted individually (valuesort). The comparison is bytewise, as strcmp in the
// reference implementation.
func (r Result) Values(mode SortMode) []string {
	rows := r.Rows
	if mode == RowSort {
		rows = slices.Clone(rows)
		slices.SortStableFunc(rows, slices.Compare[[]string])
	}
	values := make([]string, 0, len(rows)*r.Columns)
	for _, row := range rows {
		values = append(values, row...)
	}
	if mode == ValueSort {
		slices.Sort(values)
	}
	return values
}

// HashValues is the sqllogictest result hash: the hex MD5 of every value followed by "\n",
// in the order given (callers sort first).
func HashValues(values []string) string {
	h := md5.New()
	for _, v := range values {
		h.Write([]byte(v))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Describe renders values as they would be written in a test file: one per line, or
// `N values hashing to MD5` when there are more than threshold of them (threshold 0 = never).
func Describe(values []string, threshold int) string {
	if threshold > 0 && len(values) > threshold {
		return fmt.Sprintf("%d values hashing to %s", len(values), HashValues(values))
	}
	return strings.Join(values, "\n")
}

// Check compares a query's sorted values with the record's expectation and returns a
// description of the difference, or "" when they match. An expectation written as a hash
// matches on count and MD5. One written as lines matches either one value per line (the
// corpus's form) or one row per line with values separated by single spaces (an older form
// some files use).
func Check(rec *Record, res Result, values []string) string {
	if rec.Sort == Matches {
		return checkMatches(rec.Expected, res)
	}
	if rec.ExpectedHash != nil {
		got := HashValues(values)
		if len(values) != rec.ExpectedHash.Count || got != rec.ExpectedHash.MD5 {
			return fmt.Sprintf("expected %d values hashing to %s, got %d values hashing to %s",
				rec.ExpectedHash.Count, rec.ExpectedHash.MD5, len(values), got)
		}
		return ""
	}
	if slices.Equal(values, rec.Expected) {
		return ""
	}
	if res.Columns > 1 && len(rec.Expected)*res.Columns == len(values) && len(values) > 0 {
		rows := make([]string, 0, len(rec.Expected))
		for i := 0; i < len(values); i += res.Columns {
			rows = append(rows, strings.Join(values[i:i+res.Columns], " "))
		}
		if slices.Equal(rows, rec.Expected) {
			return ""
		}
	}
	return fmt.Sprintf("expected %d values, got %d values that differ", len(rec.Expected), len(values))
}

// checkMatches implements the Matches mode: each pattern must match a row, in order.
func checkMatches(patterns []string, res Result) string {
	row := 0
	for _, pattern := range patterns {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return fmt.Sprintf("pattern %q: %v", pattern, err)
		}
		for row < len(res.Rows) && !re.MatchString(strings.Join(res.Rows[row], " ")) {
			row++
		}
		if row == len(res.Rows) {
			return fmt.Sprintf("no row after the previous match matches %q", pattern)
		}
		row++
	}
	return ""
}
