package engine

import (
	"context"

	"github.com/cachedb/cachedb/catalog"
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/planner"
	"github.com/cachedb/cachedb/sql"
)

// Access is what running a statement does, so that a server can decide before it runs whether
// its caller may: read, change the engine's memory tables, or make and free datasets on the data
// nodes.
type Access uint8

const (
	// AccessRead reads: queries, EXPLAIN (ANALYZE), SET, USE.
	AccessRead Access = iota + 1
	// AccessWrite changes memory tables, views, indexes or triggers: CREATE, INSERT, UPDATE,
	// DELETE, DROP.
	AccessWrite
	// AccessDatasets makes or frees datasets: CREATE TABLE … AS SELECT reading an Iceberg table
	// on an engine with a dataset registry (which may materialize it on the data nodes), DROP
	// TABLE naming a dataset. Loading a job spec (Load, CreateDataset) is of this kind too.
	AccessDatasets
)

func (a Access) String() string {
	switch a {
	case AccessRead:
		return "read"
	case AccessWrite:
		return "write"
	case AccessDatasets:
		return "datasets"
	}
	return "unknown access"
}

// StatementAccess binds sqlText in ctx's session, without running it, and says what running it
// would do. A statement that does not bind fails here as it would when run.
func (e *Engine) StatementAccess(ctx context.Context, sqlText string) (Access, error) {
	if _, ok, _ := e.UseSession(sqlText); ok {
		return AccessRead, nil
	}
	tables, err := e.tablesFor(ctx)
	if err != nil {
		return 0, err
	}
	stmt, _, err := sql.BindPrepare(sql.WithLimits(ctx, e.cfg.Limits), sqlText, tables)
	if err != nil {
		return 0, err
	}
	switch s := stmt.(type) {
	case *planner.Query, *planner.Explain, *planner.Set:
		return AccessRead, nil
	case *planner.CreateTable:
		if s.AsSelect != nil && e.datasets != nil && readsSources(tables.Pins()) {
			return AccessDatasets, nil
		}
	case *planner.DropTable:
		for _, name := range s.Names {
			if t, err := e.catalog.Table(ctx, name); err == nil {
				if _, ok := t.(*memcat.Dataset); ok {
					return AccessDatasets, nil
				}
			}
		}
	}
	return AccessWrite, nil
}

// readsSources reports whether a bound statement's pins name a source catalog's table.
func readsSources(pins map[string]string) bool {
	for _, version := range pins {
		if !catalog.PinnedInPrimary(version) {
			return true
		}
	}
	return false
}
