package sql

import (
	"strings"

	"github.com/cachedb/cachedb/internal/errs"
)

// sqlModes are the modes MySQL 8's sql_mode takes, the combination modes ANSI and TRADITIONAL
// among them. Of these cachedb honours ANSI_QUOTES (which ANSI includes); the others are
// accepted and change nothing.
var sqlModes = map[string]bool{
	"ALLOW_INVALID_DATES": true, "ANSI": true, "ANSI_QUOTES": true, "ERROR_FOR_DIVISION_BY_ZERO": true,
	"HIGH_NOT_PRECEDENCE": true, "IGNORE_SPACE": true, "NO_AUTO_VALUE_ON_ZERO": true,
	"NO_BACKSLASH_ESCAPES": true, "NO_DIR_IN_CREATE": true, "NO_ENGINE_SUBSTITUTION": true,
	"NO_UNSIGNED_SUBTRACTION": true, "NO_ZERO_DATE": true, "NO_ZERO_IN_DATE": true,
	"ONLY_FULL_GROUP_BY": true, "PAD_CHAR_TO_FULL_LENGTH": true, "PIPES_AS_CONCAT": true,
	"REAL_AS_FLOAT": true, "STRICT_ALL_TABLES": true, "STRICT_TRANS_TABLES": true,
	"TIME_TRUNCATE_FRACTIONAL": true, "TRADITIONAL": true,
}

// SQLModeANSIQuotes reads a value of sql_mode, a comma-separated list of mode names in any case
// ("" or "0": none), and reports whether it asks for ANSI_QUOTES (directly or through ANSI). A
// name MySQL 8 does not know is an InvalidArgument error in MySQL's words.
func SQLModeANSIQuotes(value string) (bool, error) {
	if strings.TrimSpace(value) == "0" {
		return false, nil
	}
	ansi := false
	for _, name := range strings.Split(value, ",") {
		name = strings.ToUpper(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		if !sqlModes[name] {
			return false, errs.Invalidf("Variable 'sql_mode' can't be set to the value of '%s'", name)
		}
		ansi = ansi || name == "ANSI_QUOTES" || name == "ANSI"
	}
	return ansi, nil
}
