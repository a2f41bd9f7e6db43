package catalog

import "strings"

// Guard decides which tables the caller of a statement may read. A Set given one (WithGuard)
// resolves no table the guard refuses, so no statement bound through it (a query, a view's
// query, DESCRIBE, a dataset's definition, a training read) reads one; and its
// information_schema lists only the catalogs and tables the guard lets the caller read. The
// information_schema itself is always readable: it shows only what the caller may see.
type Guard interface {
	// Read returns nil when the caller may read table name (as catalog knows it: namespace
	// qualified in a namespaced catalog, without a version) of catalog, and otherwise the error
	// to refuse the statement with. own is set for the Set's primary catalog.
	Read(catalog, name string, own bool) error
	// Lists reports whether the caller may read some table of catalog, so that listings of
	// catalogs and databases show it.
	Lists(catalog string, own bool) bool
}

// WithGuard returns a copy of s that reads only what g allows (nil: everything).
func (s *Set) WithGuard(g Guard) *Set {
	out := *s
	out.guard = g
	return &out
}

// checkRead applies the Set's guard to table local (as c knows it) of catalog c.
func (s *Set) checkRead(c Catalog, local string) error {
	if s.guard == nil {
		return nil
	}
	if _, info := c.(*infoSchema); info {
		return nil
	}
	base, _, _ := strings.Cut(local, "@")
	return s.guard.Read(c.Name(), base, c == s.primary)
}

// listsCatalog reports whether information_schema shows catalog c.
func (s *Set) listsCatalog(c Catalog) bool {
	if s.guard == nil {
		return true
	}
	if _, info := c.(*infoSchema); info {
		return true
	}
	return s.guard.Lists(c.Name(), c == s.primary)
}

// listsTable reports whether information_schema shows table local of catalog c.
func (s *Set) listsTable(c Catalog, local string) bool {
	return s.checkRead(c, local) == nil
}
