package sql

import (
	"strings"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// scopeColumn is a column a name can resolve to.
type scopeColumn struct {
	planner.Column
	// merged marks the right-hand copy of a USING or NATURAL join column: it answers qualified
	// names only, and * skips it, because MySQL shows the joined column once.
	merged bool
}

// scope is the set of columns names resolve against in one query block (its FROM clause), with
// a link to the enclosing query block's scope for correlated references.
type scope struct {
	columns []scopeColumn
	// tables are the qualifiers of the FROM clause in order, lower-cased, for t.* and for
	// duplicate alias checks.
	tables []string
	outer  *scope
	// agg is the aggregation of the block this scope is the FROM of, while it binds as one:
	// aggregates of its columns in nested subqueries go there (sql/outer_aggregate.go).
	agg *aggregation
}

// newScope returns an empty scope nested in outer (nil for a top-level query block).
func newScope(outer *scope) *scope { return &scope{outer: outer} }

// add appends the columns of a table reference known by qualifier.
func (s *scope) add(qualifier string, cols []planner.Column) {
	s.tables = append(s.tables, strings.ToLower(qualifier))
	for _, c := range cols {
		s.columns = append(s.columns, scopeColumn{Column: c})
	}
}

// hasTable reports whether qualifier already names a table reference of this scope.
func (s *scope) hasTable(qualifier string) bool {
	q := strings.ToLower(qualifier)
	for _, t := range s.tables {
		if t == q {
			return true
		}
	}
	return false
}

// lookupLocal finds the column qualifier.name (qualifier may be "") in this scope only. It
// returns found=false when nothing matches, and an InvalidInput error when several columns do.
func (s *scope) lookupLocal(qualifier, name, clause string) (planner.Column, bool, error) {
	var match *scopeColumn
	for i := range s.columns {
		c := &s.columns[i]
		if !strings.EqualFold(c.Name, name) {
			continue
		}
		if qualifier == "" && c.merged {
			continue
		}
		if qualifier != "" && !strings.EqualFold(c.Table, qualifier) {
			continue
		}
		if match != nil && match.ID != c.ID {
			return planner.Column{}, false, errs.Invalidf("Column '%s' in %s is ambiguous", name, clause)
		}
		match = c
	}
	if match == nil {
		return planner.Column{}, false, nil
	}
	return match.Column, true, nil
}

// visible returns the columns * expands to, in FROM order; with a qualifier, those of that
// table reference only.
func (s *scope) visible(qualifier string) []planner.Column {
	var out []planner.Column
	for _, c := range s.columns {
		if qualifier == "" && c.merged {
			continue
		}
		if qualifier != "" && !strings.EqualFold(c.Table, qualifier) {
			continue
		}
		out = append(out, c.Column)
	}
	return out
}

// ids returns the set of column IDs this scope (not its outer scopes) holds.
func (s *scope) ids() map[planner.ColumnID]bool {
	m := make(map[planner.ColumnID]bool, len(s.columns))
	for _, c := range s.columns {
		m[c.ID] = true
	}
	return m
}

// columnRef is a reference to c.
func columnRef(c planner.Column) *planner.ColumnRef {
	return &planner.ColumnRef{ID: c.ID, Name: c.Name, T: c.Type}
}

// qualifiedName renders qualifier.name, or name alone, for messages.
func qualifiedName(qualifier, name string) string {
	if qualifier == "" {
		return name
	}
	return qualifier + "." + name
}

// putJoinedFirst reorders the columns of the join that starts at index start so that the
// visible copies of its USING columns come first, in USING order, as MySQL lists the columns of
// a USING or NATURAL join for *.
func (s *scope) putJoinedFirst(start int, using []string) {
	var first, rest []scopeColumn
	for _, name := range using {
		for _, c := range s.columns[start:] {
			if !c.merged && strings.EqualFold(c.Name, name) {
				first = append(first, c)
				break
			}
		}
	}
	for _, c := range s.columns[start:] {
		isFirst := false
		for _, f := range first {
			isFirst = isFirst || f.ID == c.ID
		}
		if !isFirst {
			rest = append(rest, c)
		}
	}
	copy(s.columns[start:], append(first, rest...))
}
