package sql

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// primaryKeyName is the name MySQL gives every primary key.
const primaryKeyName = "PRIMARY"

// tableKeys collects the PRIMARY KEY and UNIQUE keys of a CREATE TABLE: column options
// (`a INT PRIMARY KEY`, `b TEXT UNIQUE`) in column order, then table constraints (`PRIMARY
// KEY (a, b)`, `UNIQUE KEY name (c(4))`, `CONSTRAINT name UNIQUE (d)`). Plain, FULLTEXT and
// SPATIAL indexes constrain nothing and are left out. Unnamed UNIQUE keys are named as MySQL
// names them: after their first column, with _2, _3, … when the name is taken.
func tableKeys(spec *sqlparser.TableSpec, schema *arrow.Schema) ([]planner.TableKey, error) {
	kb := &keyBuilder{schema: schema, names: map[string]bool{}}
	for _, col := range spec.Columns {
		if col.Type.Options == nil {
			continue
		}
		part := []*sqlparser.IndexColumn{{Column: col.Name}}
		switch col.Type.Options.KeyOpt {
		case sqlparser.ColKeyPrimary:
			if err := kb.add(true, "", part); err != nil {
				return nil, err
			}
		case sqlparser.ColKeyUnique, sqlparser.ColKeyUniqueKey:
			if err := kb.add(false, "", part); err != nil {
				return nil, err
			}
		}
	}
	for _, idx := range spec.Indexes {
		if idx.Info == nil || !idx.Info.IsUnique() {
			continue
		}
		name := idx.Info.Name.String()
		if name == "" {
			name = idx.Info.ConstraintName.String()
		}
		if err := kb.add(idx.Info.Type == sqlparser.IndexTypePrimary, name, idx.Columns); err != nil {
			return nil, err
		}
	}
	return kb.keys, nil
}

// keyBuilder accumulates the keys of one table, checking them as MySQL does.
type keyBuilder struct {
	schema *arrow.Schema
	keys   []planner.TableKey
	names  map[string]bool // lower-cased key names taken so far
}

// add appends a key over cols. name is ignored for a primary key and may be empty for a
// UNIQUE key (then it is derived from the first column).
func (kb *keyBuilder) add(primary bool, name string, cols []*sqlparser.IndexColumn) error {
	key := planner.TableKey{Primary: primary}
	for _, c := range cols {
		if c.Expression != nil {
			return errs.Unsupportedf("a key on an expression is not supported")
		}
		idx := fieldIndexFold(kb.schema, c.Column.String())
		if idx < 0 {
			return errs.NotFoundf("Key column '%s' doesn't exist in table", c.Column.String())
		}
		for _, prev := range key.Columns {
			if prev == idx {
				return errs.Invalidf("Duplicate column name '%s'", c.Column.String())
			}
		}
		length := 0
		if c.Length != nil {
			length = *c.Length
			if length <= 0 || !isStringType(kb.schema.Field(idx).Type) {
				return errs.Invalidf("Incorrect prefix key; the used key part isn't a string, the used length is longer than the key part, or the storage engine doesn't support unique prefix keys")
			}
		}
		key.Columns = append(key.Columns, idx)
		key.PrefixLengths = append(key.PrefixLengths, length)
	}
	if len(key.Columns) == 0 {
		return errs.Invalidf("a key needs at least one column")
	}
	switch {
	case primary:
		for _, k := range kb.keys {
			if k.Primary {
				return errs.Invalidf("Multiple primary key defined")
			}
		}
		name = primaryKeyName
	case name == "":
		base := kb.schema.Field(key.Columns[0]).Name
		name = base
		for n := 2; kb.names[strings.ToLower(name)]; n++ {
			name = base + "_" + strconv.Itoa(n)
		}
	case strings.EqualFold(name, primaryKeyName):
		return errs.Invalidf("Incorrect index name '%s'", name)
	case kb.names[strings.ToLower(name)]:
		return errs.Invalidf("Duplicate key name '%s'", name)
	}
	kb.names[strings.ToLower(name)] = true
	key.Name = name
	kb.keys = append(kb.keys, key)
	return nil
}

// fieldIndexFold returns the index of the field named name (case-insensitively), or -1.
func fieldIndexFold(schema *arrow.Schema, name string) int {
	for i, f := range schema.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// isStringType reports whether a key may compare a prefix of values of type t.
func isStringType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		return true
	}
	return false
}

// withPrimaryKeyNotNull returns schema with the columns of the primary key made NOT NULL, as
// MySQL makes them.
func withPrimaryKeyNotNull(schema *arrow.Schema, keys []planner.TableKey) *arrow.Schema {
	fields := schema.Fields()
	for _, k := range keys {
		if !k.Primary {
			continue
		}
		for _, c := range k.Columns {
			fields[c].Nullable = false
		}
	}
	return arrow.NewSchema(fields, nil)
}
