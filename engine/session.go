package engine

import (
	"context"

	"github.com/cachedb/cachedb/catalog"
)

// Session is the per-client naming context a statement runs in: the catalog and db schema
// (namespace) that unqualified table names resolve in first, as chosen by a Flight SQL client's
// session options. The zero Session uses the engine's defaults (catalog.Set).
type Session struct {
	Catalog string
	Schema  string
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
	return tables.WithPins(s.Pins), nil
}
