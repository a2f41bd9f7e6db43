package memory

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/internal/errs"
)

// PrimaryKeyName is the name MySQL gives every primary key; duplicate-entry errors name the
// key as "<table>.PRIMARY".
const PrimaryKeyName = "PRIMARY"

// KeyPart is one column of a key. Length, when positive, keys a string or binary column on its
// first Length characters (bytes for binary) only, as a MySQL prefix key part does; 0 keys the
// whole value.
type KeyPart struct {
	Column int // index into the table schema
	Length int
}

// Key is a PRIMARY KEY or UNIQUE key of a memory table. No two rows of the table have equal
// values in all of a key's parts, except that a UNIQUE key allows any number of rows with a NULL
// in one of its parts. Every column of the primary key rejects NULL.
type Key struct {
	// Name is the key's name as errors report it; PrimaryKeyName for the primary key.
	Name    string
	Primary bool
	Parts   []KeyPart
}

// Columns lists the schema indexes of the key's parts in order.
func (k Key) Columns() []int {
	out := make([]int, len(k.Parts))
	for i, p := range k.Parts {
		out[i] = p.Column
	}
	return out
}

// validateKeys checks keys against schema: parts name existing columns once each, prefix
// lengths apply to string or binary columns only, at most one key is primary and key names are
// distinct (case-insensitively, as MySQL index names are).
func validateKeys(schema *arrow.Schema, keys []Key) error {
	names := map[string]bool{}
	primaries := 0
	for _, k := range keys {
		if k.Primary {
			primaries++
		}
		if k.Name == "" {
			return errs.Invalidf("a key of the table has no name")
		}
		if names[strings.ToLower(k.Name)] {
			return errs.Invalidf("Duplicate key name '%s'", k.Name)
		}
		names[strings.ToLower(k.Name)] = true
		if len(k.Parts) == 0 {
			return errs.Invalidf("key '%s' has no columns", k.Name)
		}
		seen := map[int]bool{}
		for _, p := range k.Parts {
			if p.Column < 0 || p.Column >= schema.NumFields() {
				return errs.Invalidf("key '%s' names column %d of a table with %d columns", k.Name, p.Column, schema.NumFields())
			}
			f := schema.Field(p.Column)
			if seen[p.Column] {
				return errs.Invalidf("Duplicate column name '%s' in key '%s'", f.Name, k.Name)
			}
			seen[p.Column] = true
			if p.Length < 0 || p.Length > 0 && !isStringLike(f.Type) {
				return errs.Invalidf("Incorrect prefix key: column '%s' of key '%s' is not a string or the length %d is invalid", f.Name, k.Name, p.Length)
			}
		}
	}
	if primaries > 1 {
		return errs.Invalidf("Multiple primary key defined")
	}
	return nil
}

// isStringLike reports whether a prefix length can apply to values of t.
func isStringLike(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		return true
	}
	return false
}

// orderKeys returns keys with the primary key first, the order in which rows are checked, so
// that a row breaking several keys reports the primary one as MySQL does.
func orderKeys(keys []Key) []Key {
	out := make([]Key, 0, len(keys))
	for _, k := range keys {
		if k.Primary {
			out = append(out, k)
		}
	}
	for _, k := range keys {
		if !k.Primary {
			out = append(out, k)
		}
	}
	return out
}

// copyKeys returns a deep copy, so that callers cannot change a table's keys through a slice
// they passed in or got back.
func copyKeys(keys []Key) []Key {
	if len(keys) == 0 {
		return nil
	}
	out := make([]Key, len(keys))
	for i, k := range keys {
		out[i] = Key{Name: k.Name, Primary: k.Primary, Parts: append([]KeyPart(nil), k.Parts...)}
	}
	return out
}

// duplicateEntry is the MySQL 8 error for a row whose key value another row already has.
func duplicateEntry(table string, k Key, value string) error {
	return errs.AlreadyExistsf("Duplicate entry '%s' for key '%s.%s'", value, table, k.Name)
}

// cannotBeNull is the MySQL error for a NULL in a primary key column.
func cannotBeNull(column string) error {
	return errs.Invalidf("Column '%s' cannot be null", column)
}
