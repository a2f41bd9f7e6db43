// Package iceberg serves Apache Iceberg tables as cachedb catalogs. A Catalog wraps one Iceberg
// catalog (SQL, REST, Glue) or a fixed set of bare metadata.json locations; its tables are
// read-only and each resolved Table is pinned to one snapshot. iceberg-go does the planning
// (manifest, partition and metrics pruning) and the reading (Parquet row-group pruning, deletes,
// schema evolution by field id); this package maps names, versions, schemas, filters and errors
// onto cachedb's catalog contracts and accounts for what each scan reads.
package iceberg

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg/storage"
	"github.com/cachedb/cachedb/internal/errs"
)

// Catalog types accepted in Config.Type.
const (
	TypeSQL   = "sql"
	TypeREST  = "rest"
	TypeGlue  = "glue"
	TypeFiles = "files"
)

// PropCatalogName is the Config.Properties key naming the catalog whose rows a SQL catalog
// reads. The JDBC layout that iceberg-go and pyiceberg share keys every row by catalog name, so
// reading a catalog written by pyiceberg's SqlCatalog("default", …) needs "default" here
// whatever cachedb calls the catalog. It defaults to Config.Name.
const PropCatalogName = "catalog-name"

// DefaultNamespace is where unqualified table names resolve when Config.DefaultNamespace is
// empty.
const DefaultNamespace = "default"

// Config describes one Iceberg source catalog.
type Config struct {
	// Name is the catalog name clients see (e.g. "lake").
	Name string
	// Type is "sql", "rest", "glue" or "files".
	Type string
	// URI locates the catalog. sql: a SQLite database ("sqlite:////abs/path.db" as SQLAlchemy
	// and pyiceberg write it, "file:/abs/path.db", or a plain path) or a PostgreSQL DSN
	// ("postgres://…", "postgresql://…"); rest: the base URL; glue and files: unused.
	URI string
	// Warehouse is the warehouse location (local directory, file://, s3://, s3a://).
	Warehouse string
	// DefaultNamespace is where unqualified table names resolve ("default" when empty).
	DefaultNamespace string
	// Tables, for type "files", maps a table name ("tbl" or "ns.tbl") to the location of its
	// metadata.json (local path, file://, s3://, s3a://).
	Tables map[string]string
	// LocationPrefixes are where tables given by their metadata location (a job spec's
	// metadata_location) may also be, besides the warehouse and the directories of Tables: URL or
	// path prefixes such as "s3://bucket/tables/". A location elsewhere is refused.
	LocationPrefixes []string
	// Properties are extra iceberg-go catalog properties: REST credential, token, prefix and
	// warehouse; glue.* options; PropCatalogName; s3.* overrides. They win over Storage.
	Properties map[string]string
	// Storage holds the object-store settings, merged into the properties iceberg-go gets.
	Storage storage.Config
	// SplitBytes is the size scan tasks aim at: a file (or pruned run of row groups) reading
	// more is cut into tasks at row-group boundaries (0: DefaultSplitBytes; negative: never).
	SplitBytes int64
	// ColumnCache keeps the column chunks direct reads decode, for later reads of the same row
	// groups (nil: none). One cache may serve every catalog of a process.
	ColumnCache *ColumnCache
}

// String describes the configuration without any secret: the storage secrets and every
// property whose key suggests a secret are shown as "***", and a password in the URI is
// redacted.
func (c Config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "iceberg{name=%s type=%s", c.Name, c.Type)
	if c.URI != "" {
		fmt.Fprintf(&b, " uri=%s", redactURI(c.URI))
	}
	if c.Warehouse != "" {
		fmt.Fprintf(&b, " warehouse=%s", c.Warehouse)
	}
	if c.DefaultNamespace != "" {
		fmt.Fprintf(&b, " default_namespace=%s", c.DefaultNamespace)
	}
	if len(c.Tables) > 0 {
		fmt.Fprintf(&b, " tables=%d", len(c.Tables))
	}
	for _, k := range slices.Sorted(maps.Keys(c.Properties)) {
		v := c.Properties[k]
		if isSecretKey(k) {
			v = "***"
		}
		fmt.Fprintf(&b, " %s=%s", k, v)
	}
	fmt.Fprintf(&b, " %s}", c.Storage)
	return b.String()
}

// GoString keeps %#v from printing secrets.
func (c Config) GoString() string { return c.String() }

var registerStorage sync.Once

// Catalog is an Iceberg catalog seen as a cachedb catalog.NamespacedCatalog. It connects to
// the underlying catalog lazily, on first use, and retries the connection on later uses when
// it fails, so an unreachable catalog never stops the server; every error names the catalog.
type Catalog struct {
	cfg   Config
	defNS string
	// props are the properties handed to iceberg-go: Storage's, then Config.Properties.
	props iceberg.Properties
	// secrets are values that must never appear in an error message.
	secrets []string
	// sqlConn says how to open a SQL catalog (type sql only).
	sqlConn sqlTarget
	// files are the tables of a "files" catalog.
	files []fileTable

	mu   sync.Mutex
	conn icecat.Catalog // nil until connected (always nil for type files)

	totalsCache snapshotCache[int64]
	footers     footerCache
	statsCache  snapshotCache[*fileSummary]
	// noDirect reads every task through iceberg-go's reader (see direct.go); tests compare.
	noDirect bool
	// directReads counts the tasks read directly, and fixedChunks the column chunks of them
	// decoded by fixedchunk, so tests can tell which reader ran.
	directReads, fixedChunks atomic.Int64
}

var _ catalog.NamespacedCatalog = (*Catalog)(nil)

// fileTable is one table of a "files" catalog.
type fileTable struct {
	ns, name, location string
}

// Open validates cfg and returns the catalog. It does not contact the catalog or the object
// store: that happens on first use.
func Open(ctx context.Context, cfg Config) (*Catalog, error) {
	registerStorage.Do(storage.Register)
	if cfg.Name == "" || strings.ContainsAny(cfg.Name, ".@`") {
		return nil, errs.Invalidf("iceberg catalog name %q must be non-empty and contain no '.', '@' or '`'", cfg.Name)
	}
	c := &Catalog{cfg: cfg, defNS: cfg.DefaultNamespace}
	if c.defNS == "" {
		c.defNS = DefaultNamespace
	}
	c.props = iceberg.Properties{}
	maps.Copy(c.props, cfg.Storage.Properties())
	maps.Copy(c.props, cfg.Properties)
	delete(c.props, PropCatalogName)
	if cfg.Warehouse != "" {
		c.props["warehouse"] = cfg.Warehouse
	}
	for _, s := range []string{cfg.Storage.SecretAccessKey, cfg.Storage.SessionToken, uriPassword(cfg.URI)} {
		if s != "" {
			c.secrets = append(c.secrets, s)
		}
	}
	for k, v := range cfg.Properties {
		if isSecretKey(k) && v != "" {
			c.secrets = append(c.secrets, v)
			// A REST credential is "client_id:client_secret": the secret half alone must not
			// leak either.
			if _, sec, ok := strings.Cut(v, ":"); ok && sec != "" {
				c.secrets = append(c.secrets, sec)
			}
		}
	}

	switch strings.ToLower(cfg.Type) {
	case TypeSQL:
		t, err := parseSQLURI(cfg.URI)
		if err != nil {
			return nil, errs.Invalidf("iceberg catalog %s: %v", cfg.Name, err)
		}
		c.sqlConn = t
	case TypeREST:
		if err := validateRESTURI(cfg.URI); err != nil {
			return nil, errs.Invalidf("iceberg catalog %s: %v", cfg.Name, err)
		}
	case TypeGlue:
		if err := validateGlue(cfg); err != nil {
			return nil, errs.Invalidf("iceberg catalog %s: %v", cfg.Name, err)
		}
	case TypeFiles:
		if len(cfg.Tables) == 0 {
			return nil, errs.Invalidf("iceberg catalog %s of type files lists no tables", cfg.Name)
		}
		seen := map[string]string{}
		for _, key := range slices.Sorted(maps.Keys(cfg.Tables)) {
			loc := strings.TrimSpace(cfg.Tables[key])
			ns, name := splitName(key, c.defNS)
			if name == "" || ns == "" || strings.ContainsAny(key, "@`") {
				return nil, errs.Invalidf("iceberg catalog %s: table name %q must be \"table\" or \"namespace.table\"", cfg.Name, key)
			}
			if loc == "" {
				return nil, errs.Invalidf("iceberg catalog %s: table %s has no metadata location", cfg.Name, key)
			}
			q := strings.ToLower(ns + "." + name)
			if prev, ok := seen[q]; ok {
				return nil, errs.Invalidf("iceberg catalog %s: tables %q and %q name the same table", cfg.Name, prev, key)
			}
			seen[q] = key
			c.files = append(c.files, fileTable{ns: ns, name: name, location: loc})
		}
	case "":
		return nil, errs.Invalidf("iceberg catalog %s: type is required (sql, rest, glue or files)", cfg.Name)
	default:
		return nil, errs.Invalidf("iceberg catalog %s: unknown type %q (want sql, rest, glue or files)", cfg.Name, cfg.Type)
	}
	c.cfg.Type = strings.ToLower(cfg.Type)
	return c, nil
}

// Name is the catalog's name as clients see it.
func (c *Catalog) Name() string { return c.cfg.Name }

// DefaultNamespace is where unqualified table names resolve.
func (c *Catalog) DefaultNamespace() string { return c.defNS }

// Close releases the connection to the underlying catalog, if one was made.
func (c *Catalog) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	var err error
	if cl, ok := c.conn.(icecat.Closer); ok {
		err = cl.Close()
	}
	c.conn = nil
	return err
}

// Namespaces lists the namespaces, dotted, sorted.
func (c *Catalog) Namespaces(ctx context.Context) ([]string, error) {
	if c.cfg.Type == TypeFiles {
		set := map[string]bool{}
		for _, f := range c.files {
			set[f.ns] = true
		}
		return slices.Sorted(maps.Keys(set)), nil
	}
	ids, err := c.listNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strings.Join(id, ".")
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

func (c *Catalog) listNamespaces(ctx context.Context) ([]table.Identifier, error) {
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	top, err := conn.ListNamespaces(ctx, nil)
	if err != nil {
		return nil, c.catalogErr("list namespaces", err)
	}
	if c.cfg.Type == TypeSQL {
		// The SQL catalog lists every namespace, nested ones included, at once.
		return top, nil
	}
	// REST lists one level at a time.
	var out []table.Identifier
	queue := top
	seen := map[string]bool{}
	for len(queue) > 0 && len(out) < 100000 {
		ns := queue[0]
		queue = queue[1:]
		key := strings.Join(ns, "\x00")
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, ns)
		if c.cfg.Type != TypeREST {
			continue
		}
		children, err := conn.ListNamespaces(ctx, ns)
		if err != nil {
			if errors.Is(err, icecat.ErrNoSuchNamespace) {
				continue
			}
			return nil, c.catalogErr("list namespaces in "+strings.Join(ns, "."), err)
		}
		for _, ch := range children {
			if len(ch) > len(ns) {
				queue = append(queue, ch)
			}
		}
	}
	return out, nil
}

// TablesIn lists the tables of one namespace (matched case-insensitively when there is no
// exact match), unqualified and sorted.
func (c *Catalog) TablesIn(ctx context.Context, namespace string) ([]string, error) {
	if c.cfg.Type == TypeFiles {
		var out []string
		for _, f := range c.files {
			if f.ns == namespace {
				out = append(out, f.name)
			}
		}
		if len(out) == 0 {
			for _, f := range c.files {
				if strings.EqualFold(f.ns, namespace) {
					out = append(out, f.name)
				}
			}
		}
		if len(out) == 0 {
			return nil, errs.NotFoundf("iceberg catalog %s has no namespace '%s'", c.cfg.Name, namespace)
		}
		sort.Strings(out)
		return out, nil
	}
	ids, err := c.listTables(ctx, splitNamespace(namespace))
	if errors.Is(err, icecat.ErrNoSuchNamespace) {
		var ns table.Identifier
		if ns, err = c.findNamespace(ctx, namespace); err == nil {
			ids, err = c.listTables(ctx, ns)
		}
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, id[len(id)-1])
	}
	sort.Strings(out)
	return out, nil
}

// TableNames lists every table as "ns.table", sorted.
func (c *Catalog) TableNames(ctx context.Context) ([]string, error) {
	if c.cfg.Type == TypeFiles {
		out := make([]string, 0, len(c.files))
		for _, f := range c.files {
			out = append(out, f.ns+"."+f.name)
		}
		sort.Strings(out)
		return out, nil
	}
	nss, err := c.listNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ns := range nss {
		ids, err := c.listTables(ctx, ns)
		if errors.Is(err, icecat.ErrNoSuchNamespace) {
			continue // dropped while listing
		}
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			out = append(out, strings.Join(id, "."))
		}
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

// listTables lists the identifiers of one namespace. A missing namespace is reported with
// icecat.ErrNoSuchNamespace in the chain.
func (c *Catalog) listTables(ctx context.Context, ns table.Identifier) ([]table.Identifier, error) {
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	var out []table.Identifier
	for id, err := range conn.ListTables(ctx, ns) {
		if err != nil {
			return nil, c.catalogErr("list tables in namespace "+strings.Join(ns, "."), err)
		}
		if len(id) > 0 {
			out = append(out, id)
		}
	}
	return out, nil
}

// findNamespace finds the namespace spelled like name, case-insensitively.
func (c *Catalog) findNamespace(ctx context.Context, name string) (table.Identifier, error) {
	nss, err := c.listNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	var found []table.Identifier
	for _, ns := range nss {
		if strings.EqualFold(strings.Join(ns, "."), name) {
			found = append(found, ns)
		}
	}
	switch len(found) {
	case 0:
		return nil, &errs.Error{Category: errs.NotFound,
			Msg: fmt.Sprintf("iceberg catalog %s has no namespace '%s'", c.cfg.Name, name),
			Err: icecat.ErrNoSuchNamespace}
	case 1:
		return found[0], nil
	default:
		return nil, errs.Invalidf("iceberg catalog %s: namespace name '%s' is ambiguous: %s and %s differ only in case",
			c.cfg.Name, name, strings.Join(found[0], "."), strings.Join(found[1], "."))
	}
}

// splitName splits "ns.table" (namespace levels joined by dots) into namespace and table; a
// bare "table" is in defNS.
func splitName(name, defNS string) (ns, tbl string) {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return defNS, name
}

func splitNamespace(ns string) table.Identifier {
	if ns == "" {
		return nil
	}
	return strings.Split(ns, ".")
}

// isSecretKey reports whether a property key names a secret by its spelling.
func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"secret", "token", "credential", "password", "passwd"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}
