package catalog

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

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
//   - A flat catalog (no namespaces) has the one schema "public", as Flight SQL metadata lists
//     it: "c.public.t" is "c.t", and "public.t" a table of the primary catalog.
//
// Any of these may end in "@version" (a snapshot id, a timestamp, a branch or tag) for a source
// catalog that keeps versions.
type Set struct {
	primary Catalog
	sources []Catalog
	def     Catalog
	// current, when set (a session chose a catalog), is searched first for unqualified names,
	// in namespace currentNS when that is set.
	current   Catalog
	currentNS string
	// pins holds the versions of the tables a statement resolved, by name as written (lower
	// case): given ones are resolved at that version, new ones recorded (WithPins).
	pins *pinSet
	// guard, when set, refuses the tables the statement's caller may not read (WithGuard).
	guard Guard
}

// pinSet is the name → version map of one statement.
type pinSet struct {
	mu       sync.Mutex
	versions map[string]string
	// views records whether the statement resolved a view (UsedViews).
	views bool
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

// WithCurrent returns a copy of s in which a session has chosen catalog (and namespace within
// it, "" for the catalog's default): unqualified names resolve there first, then in the primary
// catalog; namespace-qualified names resolve in catalog. Empty catalog with an empty namespace
// returns s; a namespace alone applies to the default catalog.
func (s *Set) WithCurrent(catalogName, namespace string) (*Set, error) {
	if catalogName == "" && namespace == "" {
		return s, nil
	}
	out := *s
	target := s.def
	if catalogName != "" {
		c, ok := s.Lookup(catalogName)
		if !ok {
			return nil, errs.NotFoundf("Unknown catalog '%s'", catalogName)
		}
		target = c
	}
	if target == nil || target == s.primary {
		if namespace != "" && !strings.EqualFold(namespace, PublicSchema) {
			return nil, errs.NotFoundf("Unknown database '%s': catalog %s has only the schema %s", namespace, s.primary.Name(), PublicSchema)
		}
		out.current, out.currentNS = nil, ""
		return &out, nil
	}
	out.current, out.currentNS, out.def = target, namespace, target
	return &out, nil
}

// WithPins returns a copy of s that resolves every unversioned name found in pins
// (case-insensitively) at the version pins gives ("@<snapshot id>"; a table of the primary
// catalog, a dataset, as "primary@<generation>", found only there), and records the version of
// every other versioned table it resolves. Pins then reports them all, so that running the same
// statement again with them reads exactly the same table states.
func (s *Set) WithPins(pins map[string]string) *Set {
	out := *s
	out.pins = &pinSet{versions: map[string]string{}}
	for name, v := range pins {
		out.pins.versions[strings.ToLower(name)] = v
	}
	return &out
}

// Pins returns the versions of the tables resolved so far through a Set made by WithPins (nil
// for any other Set).
func (s *Set) Pins() map[string]string {
	if s.pins == nil {
		return nil
	}
	s.pins.mu.Lock()
	defer s.pins.mu.Unlock()
	return maps.Clone(s.pins.versions)
}

// PublicSchema is the one db schema of a flat (non-namespaced) catalog, as Flight SQL clients
// see it.
const PublicSchema = "public"

// DatasetsSchema is the db schema of the primary catalog that holds its datasets only: Flight
// SQL metadata lists them there too, "datasets.t" names dataset t, and a bulk ingest into it
// makes a dataset instead of a memory table.
const DatasetsSchema = "datasets"

// Name is the primary catalog's name.
func (s *Set) Name() string { return s.primary.Name() }

// Primary is the catalog that receives DDL.
func (s *Set) Primary() Catalog { return s.primary }

// Catalogs lists every catalog, the primary first, then the sources by name.
func (s *Set) Catalogs() []Catalog { return append([]Catalog{s.primary}, s.sources...) }

// Lookup finds a catalog by name, case-insensitively; information_schema (InformationSchema)
// describes the Set's catalogs unless one of them has that name.
func (s *Set) Lookup(name string) (Catalog, bool) {
	for _, c := range s.Catalogs() {
		if strings.EqualFold(c.Name(), name) {
			return c, true
		}
	}
	if strings.EqualFold(name, InformationSchema) {
		return &infoSchema{set: s}, true
	}
	return nil, false
}

// CurrentDatabase is the MySQL database (DatabaseName) unqualified names resolve in first: the
// session's catalog and namespace (WithCurrent), or the primary catalog.
func (s *Set) CurrentDatabase() string {
	if s.current == nil {
		return s.primary.Name()
	}
	if s.current.Name() == InformationSchema {
		return InformationSchema
	}
	ns := s.currentNS
	if nc, ok := s.current.(NamespacedCatalog); ok && ns == "" {
		ns = nc.DefaultNamespace()
	}
	return DatabaseName(s.current, ns)
}

// Resolve says which catalog holds a table name and under which name that catalog knows it.
func (s *Set) Resolve(name string) (Catalog, string, error) {
	base, version := name, ""
	if i := strings.LastIndexByte(name, '@'); i > 0 {
		base, version = name[:i], name[i:]
	}
	dot := strings.LastIndexByte(base, '.')
	if dot < 0 {
		if s.current != nil {
			if s.currentNS != "" {
				return s.current, s.currentNS + "." + name, nil
			}
			return s.current, name, nil
		}
		if version == "" || s.def == nil {
			return s.primary, name, nil
		}
		return s.def, name, nil
	}
	qualifier, table := base[:dot], base[dot+1:]
	first, rest, _ := strings.Cut(qualifier, ".")
	if _, ok := s.Lookup(first); !ok && rest == "" && strings.EqualFold(first, PublicSchema) && version == "" {
		// "public.t": the flat primary catalog's one schema, as metadata lists it.
		return s.primary, table, nil
	}
	if c, ok := s.Lookup(first); ok {
		if _, namespaced := c.(NamespacedCatalog); !namespaced && strings.EqualFold(rest, PublicSchema) {
			// "c.public.t" names table t of flat catalog c, as metadata lists it.
			rest = ""
		}
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

// Table resolves name (see Set) and returns the table, at its pinned version when the Set has
// pins (WithPins). A table the Set's guard refuses is an error (WithGuard).
func (s *Set) Table(ctx context.Context, name string) (Table, error) {
	if s.pins == nil {
		return s.table(ctx, name)
	}
	key := strings.ToLower(name)
	s.pins.mu.Lock()
	version, pinned := s.pins.versions[key]
	s.pins.mu.Unlock()
	if pinned {
		// A name written with a version (a tag, a branch, a timestamp) is pinned too: to the
		// snapshot it resolved to, in case the tag moves.
		base, _, _ := strings.Cut(name, "@")
		if v, ok := strings.CutPrefix(version, primaryPin); ok {
			// Pinned in the primary catalog (a dataset): only there, never a source's table
			// of the same name, which a version number of the other kind would not find.
			local := base
			if dot := strings.LastIndexByte(base, '.'); dot >= 0 {
				local = base[dot+1:]
			}
			if err := s.checkRead(s.primary, local); err != nil {
				return nil, err
			}
			t, err := s.primary.Table(ctx, local+v)
			if errs.CategoryOf(err) == errs.NotFound {
				// The generation is internal: name the table as the statement wrote it.
				return nil, errs.NotFoundf("Table '%s' doesn't exist (it was dropped or replaced while the statement ran)", name)
			}
			return t, err
		}
		return s.table(ctx, base+version)
	}
	t, c, err := s.tableIn(ctx, name)
	if vt, ok := t.(VersionedTable); ok && err == nil && vt.Version() != "" {
		version := vt.Version()
		if c == s.primary {
			version = primaryPin + version
		}
		s.pins.mu.Lock()
		s.pins.versions[key] = version
		s.pins.mu.Unlock()
	}
	return t, err
}

// primaryPin starts the pin of a table resolved in the primary catalog (a dataset, "@<generation>"),
// so that the pin says where the name resolved: a dataset and a source table may share a name.
const primaryPin = "primary"

func (s *Set) table(ctx context.Context, name string) (Table, error) {
	t, _, err := s.tableIn(ctx, name)
	return t, err
}

// tableIn resolves name and also returns the catalog the table was found in. A table the
// guard refuses is an error.
func (s *Set) tableIn(ctx context.Context, name string) (Table, Catalog, error) {
	t, c, local, err := s.find(ctx, name)
	if err == nil {
		if err := s.checkRead(c, local); err != nil {
			return nil, nil, err
		}
	}
	return t, c, err
}

// find resolves name: the table, the catalog it was found in and its name there.
func (s *Set) find(ctx context.Context, name string) (Table, Catalog, string, error) {
	if dataset, qualified, ok := s.datasetsName(name); ok {
		t, err := s.primary.Table(ctx, dataset)
		if _, isDataset := t.(VersionedTable); err == nil && isDataset {
			return t, s.primary, dataset, nil
		}
		if err != nil && errs.CategoryOf(err) != errs.NotFound {
			return nil, nil, "", err
		}
		// "datasets.t" named namespace datasets of the default catalog before datasets had a
		// schema of their own: without such a dataset, it still does.
		if !qualified && s.def != nil {
			if t, c, local, err := s.findSource(ctx, name); errs.CategoryOf(err) != errs.NotFound {
				return t, c, local, err
			}
		}
		return nil, nil, "", errs.NotFoundf("Dataset '%s' doesn't exist", dataset)
	}
	return s.findSource(ctx, name)
}

// datasetsName reads a name in the primary catalog's schema of datasets (DatasetsSchema):
// "datasets.t" (when no catalog is named datasets) or "<primary>.datasets.t", without a
// version. It returns the dataset's name, and whether the primary catalog was named.
func (s *Set) datasetsName(name string) (dataset string, qualified, ok bool) {
	if strings.Contains(name, "@") {
		return "", false, false
	}
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		return "", false, false
	}
	first, rest, _ := strings.Cut(name[:dot], ".")
	switch c, found := s.Lookup(first); {
	case !found && rest == "" && strings.EqualFold(first, DatasetsSchema):
		return name[dot+1:], false, true
	case found && c == s.primary && strings.EqualFold(rest, DatasetsSchema):
		return name[dot+1:], true, true
	}
	return "", false, false
}

// findSource is find for names outside the schema of datasets.
func (s *Set) findSource(ctx context.Context, name string) (Table, Catalog, string, error) {
	c, local, err := s.Resolve(name)
	if err != nil {
		return nil, nil, "", err
	}
	if c != s.primary && strings.Contains(name, "@") && !strings.Contains(name, ".") {
		// A versioned unqualified name is a pinned dataset of the primary catalog when it has
		// one of that name; a source's table otherwise.
		if t, err := s.primary.Table(ctx, name); err == nil || errs.CategoryOf(err) != errs.NotFound || s.hasBase(ctx, name) {
			return t, s.primary, name, err
		}
	}
	t, err := c.Table(ctx, local)
	if err == nil || errs.CategoryOf(err) != errs.NotFound || strings.Contains(name, ".") {
		return t, c, local, err
	}
	// An unqualified name not found where it resolved first: try the other place.
	switch {
	case c == s.primary && s.def != nil:
		if t2, err2 := s.def.Table(ctx, name); err2 == nil {
			return t2, s.def, name, nil
		}
	case c == s.current && !strings.Contains(name, "@"):
		if t2, err2 := s.primary.Table(ctx, name); err2 == nil {
			return t2, s.primary, name, nil
		}
	}
	return t, c, local, err
}

// hasBase reports whether the primary catalog has a table named as versioned name is, without
// its version.
func (s *Set) hasBase(ctx context.Context, name string) bool {
	base, _, _ := strings.Cut(name, "@")
	_, err := s.primary.Table(ctx, base)
	return err == nil
}

// TableNames lists the primary catalog's tables.
func (s *Set) TableNames(ctx context.Context) ([]string, error) { return s.primary.TableNames(ctx) }

// View, CreateView and DropView delegate to the primary catalog, which holds all views.
func (s *Set) View(ctx context.Context, name string) (string, bool) {
	if vc, ok := s.primary.(ViewCatalog); ok {
		query, found := vc.View(ctx, name)
		if found && s.pins != nil {
			s.pins.mu.Lock()
			s.pins.views = true
			s.pins.mu.Unlock()
		}
		return query, found
	}
	return "", false
}

// UsedViews reports whether a statement resolved through a Set made by WithPins named a view of
// the primary catalog. Such a statement's text means something only where those views exist.
func (s *Set) UsedViews() bool {
	if s.pins == nil {
		return false
	}
	s.pins.mu.Lock()
	defer s.pins.mu.Unlock()
	return s.pins.views
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

// PinnedInPrimary reports whether a version Pins recorded is of a table of the primary catalog
// (a dataset) rather than of a source catalog's table.
func PinnedInPrimary(version string) bool { return strings.HasPrefix(version, primaryPin) }
