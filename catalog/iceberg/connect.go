package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/glue"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	_ "github.com/jackc/pgx/v5/stdlib" // registers database/sql driver "pgx"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/cachedb/cachedb/internal/errs"
)

// sqlTarget says how to open a SQL catalog's database.
type sqlTarget struct {
	driver  string
	dialect sqlcat.SupportedDialect
	dsn     string
	// path is the SQLite database file ("" for PostgreSQL); it must exist, since a reader has
	// no business creating a catalog.
	path string
}

// parseSQLURI accepts the URI forms people write for SQL catalogs:
//
//   - "sqlite:///rel/path.db" and "sqlite:////abs/path.db": SQLAlchemy's (and so pyiceberg's)
//     spelling, where the path follows the third slash. When the relative reading names no file
//     but the absolute one does, the absolute one is used, since "sqlite:///abs/path.db" is a
//     common way of meaning /abs/path.db.
//   - "file:/abs/path.db", "file:///abs/path.db", "file:rel.db": SQLite URIs.
//   - a plain path.
//   - "postgres://…" and "postgresql://…": a PostgreSQL DSN.
func parseSQLURI(uri string) (sqlTarget, error) {
	uri = strings.TrimSpace(uri)
	if uri == "" {
		return sqlTarget{}, errors.New("a SQL catalog needs a uri (a SQLite file or a postgres:// DSN)")
	}
	lower := strings.ToLower(uri)
	switch {
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		if _, err := url.Parse(uri); err != nil {
			return sqlTarget{}, fmt.Errorf("uri %s is not a valid PostgreSQL DSN", redactURI(uri))
		}
		return sqlTarget{driver: "pgx", dialect: sqlcat.Postgres, dsn: uri}, nil
	case strings.HasPrefix(lower, "sqlite://"):
		rest, ok := strings.CutPrefix(uri[len("sqlite://"):], "/")
		if !ok || rest == "" {
			return sqlTarget{}, fmt.Errorf("uri %s: want sqlite:///relative/path.db or sqlite:////absolute/path.db", uri)
		}
		if i := strings.IndexByte(rest, '?'); i >= 0 {
			rest = rest[:i]
		}
		path := rest
		if !filepath.IsAbs(path) {
			if _, err := os.Stat(path); err != nil {
				if _, err := os.Stat("/" + path); err == nil {
					path = "/" + path
				}
			}
		}
		return sqliteTarget(path), nil
	case strings.HasPrefix(lower, "file:"):
		u, err := url.Parse(uri)
		if err != nil {
			return sqlTarget{}, fmt.Errorf("uri %s is not a valid SQLite file URI: %v", uri, err)
		}
		path := u.Path
		if path == "" {
			path = u.Opaque
		}
		if path == "" {
			return sqlTarget{}, fmt.Errorf("uri %s names no file", uri)
		}
		t := sqliteTarget(path)
		t.dsn = uri
		return t, nil
	case strings.Contains(uri, "://"):
		u, _ := url.Parse(uri)
		scheme := ""
		if u != nil {
			scheme = u.Scheme
		}
		return sqlTarget{}, fmt.Errorf("uri %s: unsupported SQL catalog scheme %q (want sqlite, file or postgres)", redactURI(uri), scheme)
	default:
		return sqliteTarget(uri), nil
	}
}

func sqliteTarget(path string) sqlTarget {
	return sqlTarget{driver: sqliteshim.ShimName, dialect: sqlcat.SQLite, dsn: "file:" + path, path: path}
}

func validateRESTURI(uri string) error {
	if uri == "" {
		return errors.New("a REST catalog needs a uri (its base URL)")
	}
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("uri %s is not an http:// or https:// URL", redactURI(uri))
	}
	return nil
}

func validateGlue(cfg Config) error {
	p := cfg.Properties
	if (p[glue.AccessKeyID] == "") != (p[glue.SecretAccessKey] == "") {
		return fmt.Errorf("%s and %s must be given together", glue.AccessKeyID, glue.SecretAccessKey)
	}
	if p[glue.Endpoint] != "" {
		if u, err := url.Parse(p[glue.Endpoint]); err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("%s %q is not a URL", glue.Endpoint, p[glue.Endpoint])
		}
	}
	if p[glue.MaxRetries] != "" {
		if _, err := fmt.Sscanf(p[glue.MaxRetries], "%d", new(int)); err != nil {
			return fmt.Errorf("%s %q is not an integer", glue.MaxRetries, p[glue.MaxRetries])
		}
	}
	return nil
}

// connect returns the underlying catalog, connecting on first use. A failed connection is not
// remembered: the next use tries again.
func (c *Catalog) connect(ctx context.Context) (icecat.Catalog, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		return c.conn, nil
	}
	var (
		conn icecat.Catalog
		err  error
	)
	switch c.cfg.Type {
	case TypeSQL:
		conn, err = c.connectSQL(ctx)
	case TypeREST:
		conn, err = c.connectREST(ctx)
	case TypeGlue:
		conn, err = c.connectGlue(ctx)
	default:
		return nil, errs.Internalf("iceberg catalog %s of type %s has no catalog connection", c.cfg.Name, c.cfg.Type)
	}
	if err != nil {
		return nil, err
	}
	c.conn = conn
	return conn, nil
}

func (c *Catalog) connectSQL(ctx context.Context) (icecat.Catalog, error) {
	t := c.sqlConn
	where := redactURI(c.cfg.URI)
	if t.path != "" {
		if _, err := os.Stat(t.path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, errs.NotFoundf("iceberg catalog %s: SQLite catalog database %s does not exist", c.cfg.Name, t.path)
			}
			return nil, c.scrub(fmt.Errorf("iceberg catalog %s: SQLite catalog database %s: %w", c.cfg.Name, t.path, err))
		}
	}
	db, err := sql.Open(t.driver, t.dsn)
	if err != nil {
		return nil, c.unreachable(where, err)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, c.unreachable(where, err)
	}
	props := maps.Clone(c.props)
	if _, ok := props["init_catalog_tables"]; !ok {
		// A reader must not create the catalog tables in someone else's database.
		props["init_catalog_tables"] = "false"
	}
	name := c.cfg.Properties[PropCatalogName]
	if name == "" {
		name = c.cfg.Name
	}
	cat, err := sqlcat.NewCatalog(name, db, t.dialect, props)
	if err != nil {
		_ = db.Close()
		return nil, c.unreachable(where, err)
	}
	return &ownedSQL{Catalog: cat, db: db}, nil
}

// ownedSQL closes the database handle the catalog was built on.
type ownedSQL struct {
	*sqlcat.Catalog
	db *sql.DB
}

func (o *ownedSQL) Close() error {
	return errors.Join(o.Catalog.Close(), o.db.Close())
}

func (c *Catalog) connectREST(ctx context.Context) (icecat.Catalog, error) {
	props := maps.Clone(c.props)
	props["type"] = "rest"
	props["uri"] = c.cfg.URI
	for _, k := range []string{"credential", "warehouse"} {
		if _, ok := props[k]; !ok {
			// catalog.Load fills these from ~/.iceberg-go.yaml when absent; cachedb's own
			// configuration is the only source.
			props[k] = ""
		}
	}
	cat, err := icecat.Load(ctx, c.cfg.Name, props)
	if err != nil {
		return nil, c.unreachable(redactURI(c.cfg.URI), err)
	}
	if _, ok := cat.(*rest.Catalog); !ok {
		return nil, errs.Internalf("iceberg catalog %s: loaded a %T, not a REST catalog", c.cfg.Name, cat)
	}
	return cat, nil
}

func (c *Catalog) connectGlue(ctx context.Context) (icecat.Catalog, error) {
	p := c.cfg.Properties
	var opts []func(*awsconfig.LoadOptions) error
	region := p[glue.Region]
	if region == "" {
		region = c.cfg.Storage.Region
	}
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	if ep := p[glue.Endpoint]; ep != "" {
		opts = append(opts, awsconfig.WithBaseEndpoint(ep))
	}
	switch {
	case p[glue.AccessKeyID] != "":
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(
			p[glue.AccessKeyID], p[glue.SecretAccessKey], p[glue.SessionToken])))
	case c.cfg.Storage.AccessKeyID != "" && c.cfg.Storage.Endpoint == "":
		// Static keys for AWS S3 are AWS keys and serve Glue in the same account; keys for a
		// custom endpoint (MinIO) are not.
		s := c.cfg.Storage
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(
			s.AccessKeyID, s.SecretAccessKey, s.SessionToken)))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, c.scrub(errs.Invalidf("iceberg catalog %s: loading the AWS configuration for Glue: %v", c.cfg.Name, err))
	}
	if awsCfg.Region == "" {
		return nil, errs.Invalidf("iceberg catalog %s: Glue needs a region (%s, the s3 region or AWS_REGION)", c.cfg.Name, glue.Region)
	}
	props := glue.AwsProperties{}
	maps.Copy(props, c.props)
	cat, err := glue.NewCatalog(glue.WithAwsConfig(awsCfg), glue.WithAwsProperties(props))
	if err != nil {
		return nil, c.scrub(errs.Invalidf("iceberg catalog %s: Glue: %v", c.cfg.Name, err))
	}
	return cat, nil
}

// unreachable reports a catalog that could not be reached or opened.
func (c *Catalog) unreachable(where string, err error) error {
	return c.scrub(&errs.Error{Category: errs.Internal,
		Msg: fmt.Sprintf("iceberg catalog %s: cannot reach %s catalog at %s", c.cfg.Name, c.cfg.Type, where),
		Err: err})
}

// catalogErr wraps an error from the underlying catalog, categorizing missing objects.
func (c *Catalog) catalogErr(op string, err error) error {
	cat := errs.Internal
	switch {
	case errors.Is(err, icecat.ErrNoSuchTable), errors.Is(err, icecat.ErrNoSuchNamespace):
		cat = errs.NotFound
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		cat = errs.Canceled
	case errs.CategoryOf(err) != errs.Internal:
		cat = errs.CategoryOf(err)
	}
	return c.scrub(&errs.Error{Category: cat, Msg: fmt.Sprintf("iceberg catalog %s: %s", c.cfg.Name, op), Err: err})
}

// scrub hides secret values in err's message. The chain stays intact for errors.Is/As.
func (c *Catalog) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	hidden := msg
	for _, s := range c.secrets {
		if len(s) >= 4 {
			hidden = strings.ReplaceAll(hidden, s, "***")
		}
	}
	if hidden == msg {
		return err
	}
	return &scrubbed{msg: hidden, err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (s *scrubbed) Error() string { return s.msg }
func (s *scrubbed) Unwrap() error { return s.err }

// redactURI hides the password of a URI with user information.
func redactURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.User == nil {
		return uri
	}
	return u.Redacted()
}

func uriPassword(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}
