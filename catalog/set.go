package catalog

import (
	"context"
	"slices"
	"strings"

	"github.com/cachedb/cachedb/internal/errs"
)

// Set resolves table names across several catalogs: the engine's own catalog (memory tables,
// views and datasets; it receives all DDL) and any number of named source catalogs (Iceberg).
// Names resolve as follows (docs/catalogs.md):
//
//   - "t": the primary catalog; when it has no such table, the default source catalog's default
//     namespace.
//   - "c.t", with c a catalog name: table t of catalog c (its default namespace).
//   - "c.ns.t" (written `c.ns`.t, since MySQL names have two parts): namespace ns of catalog c.
//   - "ns.t", with ns not a catalog name: namespace ns of the default source catalog.
//
// Any of these may end in "@version" (a snapshot id, a timestamp, a branch or tag) for a source
// catalog that keeps versions.
type Set struct {
	primary Catalog
	sources []Catalog
	def     Catalog
}

// NewSet combines catalogs. defaultSource names the source catalog that unqualified and
// namespace-qualified names fall back to ("" for none). Catalog names must be unique,
// case-insensitively, and must not contain dots.
func NewSet(primary Catalog, sources []Catalog, defaultSource string) (*Set, error) {
	s := &Set{primary: primary}
	seen := map[string]bool{strings.ToLower(primary.Name()): true}
	for _, c := range sources {
		key := strings.ToLower(c.Name())
		if key == "" || strings.ContainsAny(key, ".@`") {
			return nil, errs.Invalidf("catalog name %q must be non-empty and contain no '.', '@' or '`'", c.Name())
		}
		if seen[key] {
			return nil, errs.Invalidf("catalog name %q is used twice", c.Name())
		}
		seen[key] = true
		s.sources = append(s.sources, c)
		if strings.EqualFold(c.Name(), defaultSource) {
			s.def = c
		}
	}
	if defaultSource != "" && s.def == nil {
		return nil, errs.Invalidf("default catalog %q is not configured", defaultSource)
	}
	slices.SortFunc(s.sources, func(a, b Catalog) int { return strings.Compare(a.Name(), b.Name()) })
	return s, nil
}

// Name is the primary catalog's name.
func (s *Set) Name() string { return s.primary.Name() }

// Primary is the catalog that receives DDL.
func (s *Set) Primary() Catalog { return s.primary }

// Catalogs lists every catalog, the primary first, then the sources by name.
func (s *Set) Catalogs() []Catalog { return append([]Catalog{s.primary}, s.sources...) }

// Lookup finds a catalog by name, case-insensitively.
func (s *Set) Lookup(name string) (Catalog, bool) {
	for _, c := range s.Catalogs() {
		if strings.EqualFold(c.Name(), name) {
			return c, true
		}
	}
	return nil, false
}

// Resolve says which catalog holds a table name and under which name that catalog knows it.
func (s *Set) Resolve(name string) (Catalog, string, error) {
	base, version := name, ""
	if i := strings.LastIndexByte(name, '@'); i > 0 {
		base, version = name[:i], name[i:]
	}
	dot := strings.LastIndexByte(base, '.')
	if dot < 0 {
		if version == "" || s.def == nil {
			return s.primary, name, nil
		}
		return s.def, name, nil
	}
	qualifier, table := base[:dot], base[dot+1:]
	first, rest, _ := strings.Cut(qualifier, ".")
	if c, ok := s.Lookup(first); ok {
		if c == s.primary {
			if rest != "" || version != "" {
				return nil, "", errs.NotFoundf("Table '%s' doesn't exist", name)
			}
			return c, table, nil
		}
		if rest == "" {
			return c, table + version, nil
		}
		return c, rest + "." + table + version, nil
	}
	if s.def == nil {
		return nil, "", errs.NotFoundf("Table '%s' doesn't exist: no catalog named '%s'", name, first)
	}
	return s.def, qualifier + "." + table + version, nil
}

// Table resolves name (see Set) and returns the table.
func (s *Set) Table(ctx context.Context, name string) (Table, error) {
	c, local, err := s.Resolve(name)
	if err != nil {
		return nil, err
	}
	t, err := c.Table(ctx, local)
	if err != nil && c == s.primary && s.def != nil && !strings.Contains(name, ".") &&
		errs.CategoryOf(err) == errs.NotFound {
		if t2, err2 := s.def.Table(ctx, name); err2 == nil {
			return t2, nil
		}
	}
	return t, err
}

// TableNames lists the primary catalog's tables.
func (s *Set) TableNames(ctx context.Context) ([]string, error) { return s.primary.TableNames(ctx) }

// View, CreateView and DropView delegate to the primary catalog, which holds all views.
func (s *Set) View(ctx context.Context, name string) (string, bool) {
	if vc, ok := s.primary.(ViewCatalog); ok {
		return vc.View(ctx, name)
	}
	return "", false
}

func (s *Set) CreateView(ctx context.Context, name, query string, orReplace bool) error {
	if vc, ok := s.primary.(ViewCatalog); ok {
		return vc.CreateView(ctx, name, query, orReplace)
	}
	return errs.Unsupportedf("catalog %s does not store views", s.primary.Name())
}

func (s *Set) DropView(ctx context.Context, name string, ifExists bool) error {
	if vc, ok := s.primary.(ViewCatalog); ok {
		return vc.DropView(ctx, name, ifExists)
	}
	return errs.Unsupportedf("catalog %s does not store views", s.primary.Name())
}
