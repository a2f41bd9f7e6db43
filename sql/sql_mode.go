package sql

import (
	"context"
	"slices"
	"strings"

	"github.com/cachedb/cachedb/internal/errs"
)

// DefaultSQLMode is @@sql_mode of a session that set none: MySQL 8's default modes.
const DefaultSQLMode = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"

// sqlModeOrder lists the modes MySQL 8's sql_mode takes in the order MySQL reports them (the
// order of their bits), the combination modes ANSI and TRADITIONAL among them. Of these cachedb
// honours ANSI_QUOTES; the others are accepted, reported by @@sql_mode and change nothing.
var sqlModeOrder = []string{
	"REAL_AS_FLOAT", "PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "ONLY_FULL_GROUP_BY",
	"NO_UNSIGNED_SUBTRACTION", "NO_DIR_IN_CREATE", "ANSI", "NO_AUTO_VALUE_ON_ZERO",
	"NO_BACKSLASH_ESCAPES", "STRICT_TRANS_TABLES", "STRICT_ALL_TABLES", "NO_ZERO_IN_DATE",
	"NO_ZERO_DATE", "ALLOW_INVALID_DATES", "ERROR_FOR_DIVISION_BY_ZERO", "TRADITIONAL",
	"HIGH_NOT_PRECEDENCE", "NO_ENGINE_SUBSTITUTION", "PAD_CHAR_TO_FULL_LENGTH",
	"TIME_TRUNCATE_FRACTIONAL",
}

// sqlModeCombinations are the modes a combination mode sets besides itself.
var sqlModeCombinations = map[string][]string{
	"ANSI":        {"REAL_AS_FLOAT", "PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "ONLY_FULL_GROUP_BY"},
	"TRADITIONAL": {"STRICT_TRANS_TABLES", "STRICT_ALL_TABLES", "NO_ZERO_IN_DATE", "NO_ZERO_DATE", "ERROR_FOR_DIVISION_BY_ZERO", "NO_ENGINE_SUBSTITUTION"},
}

// NormalizeSQLMode reads a value of sql_mode, a comma-separated list of mode names in any case
// ("" or "0": none), as MySQL 8 stores it: combination modes expanded, each mode once, in
// MySQL's order ("strict_trans_tables, ansi" is "REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,
// IGNORE_SPACE,ONLY_FULL_GROUP_BY,ANSI,STRICT_TRANS_TABLES"). A name MySQL 8 does not know is an InvalidArgument error in MySQL's words.
func NormalizeSQLMode(value string) (string, error) {
	if strings.TrimSpace(value) == "0" {
		return "", nil
	}
	set := map[string]bool{}
	for _, name := range strings.Split(value, ",") {
		name = strings.ToUpper(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		if !slices.Contains(sqlModeOrder, name) {
			return "", errs.Invalidf("Variable 'sql_mode' can't be set to the value of '%s'", name)
		}
		set[name] = true
		for _, m := range sqlModeCombinations[name] {
			set[m] = true
		}
	}
	var out []string
	for _, m := range sqlModeOrder {
		if set[m] {
			out = append(out, m)
		}
	}
	return strings.Join(out, ","), nil
}

// SQLModeANSIQuotes reports whether a normalized sql_mode has ANSI_QUOTES: double-quoted tokens
// are names.
func SQLModeANSIQuotes(mode string) bool {
	return slices.Contains(strings.Split(mode, ","), "ANSI_QUOTES")
}

type sqlModeKey struct{}

// WithSQLMode returns ctx in which @@sql_mode is mode (a session's, normalized), not
// DefaultSQLMode.
func WithSQLMode(ctx context.Context, mode string) context.Context {
	return context.WithValue(ctx, sqlModeKey{}, mode)
}

// sqlModeOf is @@sql_mode in ctx.
func sqlModeOf(ctx context.Context) string {
	if mode, ok := ctx.Value(sqlModeKey{}).(string); ok {
		return mode
	}
	return DefaultSQLMode
}
