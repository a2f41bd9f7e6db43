package engine

import (
	"context"
	"strings"
	"time"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/sql"
)

// Session is the per-client context a statement runs in: the catalog and db schema (namespace)
// that unqualified table names resolve in first, and the limits of the client's statements, as
// chosen by a Flight SQL client's session options or SET. The zero Session uses the engine's
// defaults (catalog.Set) and no limits of its own.
type Session struct {
	Catalog string
	Schema  string
	// MemoryLimit bounds what one statement of the session reserves from the memory pool, in
	// bytes, in each process it runs in (0: only the process's limit). See Engine.QueryMemory.
	MemoryLimit int64
	// StatementTimeout bounds each statement of the session (0: only the server's own); the
	// server applies it (the engine only carries it).
	StatementTimeout time.Duration
	// SQLMode is the session's sql_mode (SET sql_mode), normalized (sql.NormalizeSQLMode); nil
	// for the server's default. @@sql_mode reports it; of its modes ANSI_QUOTES makes a
	// double-quoted token a name, not a string (ANSIQuotes), which the server applies by
	// rewriting the session's statements as they arrive (SessionText).
	SQLMode *string
	// Pins fixes the versions of versioned tables by name as written (catalog.Set.WithPins):
	// the Pins of a Prepare, given to the Execute of the same text, make it read exactly the
	// table states the Prepare saw.
	Pins map[string]string
}

type sessionKey struct{}

// WithSession returns ctx carrying s for Execute and Prepare.
func WithSession(ctx context.Context, s Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// ANSIQuotes reports whether the session's sql_mode has ANSI_QUOTES.
func (s Session) ANSIQuotes() bool { return s.SQLMode != nil && sql.SQLModeANSIQuotes(*s.SQLMode) }

// SessionText is sqlText as the session of ctx reads it: under ANSI_QUOTES, its double-quoted
// names rewritten as backquoted ones (sql.ANSIQuotes), so that the engine, and the data nodes a
// ticket carries the text to, read it in MySQL's default dialect; otherwise sqlText itself.
func SessionText(ctx context.Context, sqlText string) string {
	if SessionFrom(ctx).ANSIQuotes() {
		if text, ok := sql.ANSIQuotes(sqlText); ok {
			return text
		}
	}
	return sqlText
}

// SessionFrom returns the Session ctx carries (the zero Session if none).
func SessionFrom(ctx context.Context) Session {
	s, _ := ctx.Value(sessionKey{}).(Session)
	return s
}

// ValidateSession reports whether s names a catalog and schema that exist, with the same error a
// statement would get.
func (e *Engine) ValidateSession(s Session) error {
	_, err := e.tables.WithCurrent(s.Catalog, s.Schema)
	return err
}

// tablesFor is the name resolution of a statement run in ctx.
func (e *Engine) tablesFor(ctx context.Context) (*catalog.Set, error) {
	s := SessionFrom(ctx)
	tables, err := e.tables.WithCurrent(s.Catalog, s.Schema)
	if err != nil {
		return nil, err
	}
	if g := guardFrom(ctx); g != nil {
		tables = tables.WithGuard(g)
	}
	return tables.WithPins(s.Pins), nil
}

// UseSession reads a USE statement: whether text is one and, if so, the session it switches to
// (the database as SHOW DATABASES names it: a catalog, catalog.namespace, or a namespace of the
// default catalog). A database that does not exist is a NotFound error. The server keeps the
// session (the engine keeps none); running the statement itself changes nothing. The session
// returned names only the database: the caller keeps the rest of its session (WithDatabase).
func (e *Engine) UseSession(text string) (Session, bool, error) {
	db, ok := sql.UseDatabase(text)
	if !ok {
		return Session{}, false, nil
	}
	var s Session
	if _, found := e.tables.Lookup(db); found {
		s = Session{Catalog: db}
	} else if first, rest, dotted := strings.Cut(db, "."); dotted {
		if _, found := e.tables.Lookup(first); found {
			s = Session{Catalog: first, Schema: rest}
		}
	}
	if s.Catalog == "" {
		s = Session{Schema: db}
	}
	if err := e.namespaceExists(s); err != nil {
		return Session{}, true, errs.NotFoundf("Unknown database '%s'", db)
	}
	return s, true, nil
}

// namespaceExists checks that the catalog and namespace a session names exist.
func (e *Engine) namespaceExists(s Session) error {
	tables, err := e.tables.WithCurrent(s.Catalog, s.Schema)
	if err != nil {
		return err
	}
	db := tables.CurrentDatabase()
	cat, ns, _ := strings.Cut(db, ".")
	c, ok := e.tables.Lookup(cat)
	nc, namespaced := c.(catalog.NamespacedCatalog)
	if !ok || !namespaced {
		return nil
	}
	names, err := nc.Namespaces(context.Background())
	if err != nil {
		return err
	}
	for _, n := range names {
		if strings.EqualFold(n, ns) {
			return nil
		}
	}
	return errs.NotFoundf("Unknown database '%s'", db)
}

// WithDatabase is s switched to the catalog and schema of use (from UseSession), its limits kept.
func (s Session) WithDatabase(use Session) Session {
	s.Catalog, s.Schema = use.Catalog, use.Schema
	return s
}
