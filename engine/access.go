package engine

import (
	"context"
	"strings"

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

// Target is a table a statement changes, makes or drops: the catalog its name resolves in and
// its name there. Own is set for the engine's own catalog, the one that takes DDL.
type Target struct {
	Catalog, Name string
	Own           bool
}

// StatementAccess binds sqlText in ctx's session, without running it, and says what running it
// would do, and to which tables (none for a query: what a query reads passes ctx's guard as it
// binds, WithGuard). A statement that does not bind fails here as it would when run.
func (e *Engine) StatementAccess(ctx context.Context, sqlText string) (Access, []Target, error) {
	if _, ok, _ := e.UseSession(sqlText); ok {
		return AccessRead, nil, nil
	}
	tables, err := e.tablesFor(ctx)
	if err != nil {
		return 0, nil, err
	}
	stmt, _, err := sql.BindPrepare(e.bindContext(ctx), sqlText, tables)
	if err != nil {
		return 0, nil, err
	}
	targets := targetsOf(tables, stmt)
	switch s := stmt.(type) {
	case *planner.Query, *planner.Explain, *planner.Set:
		return AccessRead, nil, nil
	case *planner.CreateTable:
		if s.AsSelect != nil && e.datasets != nil && readsSources(tables.Pins()) {
			return AccessDatasets, targets, nil
		}
	case *planner.DropTable:
		for _, name := range s.Names {
			if t, err := e.catalog.Table(ctx, name); err == nil {
				if _, ok := t.(*memcat.Dataset); ok {
					return AccessDatasets, targets, nil
				}
			}
		}
	}
	return AccessWrite, targets, nil
}

// targetsOf lists the tables a bound statement changes, makes or drops (DROP TRIGGER names
// none: a trigger is known by its own name).
func targetsOf(tables *catalog.Set, stmt planner.Statement) []Target {
	var names []string
	switch s := stmt.(type) {
	case *planner.CreateTable:
		names = []string{s.Name}
	case *planner.Insert:
		names = []string{s.Table}
	case *planner.Update:
		names = []string{s.Table}
	case *planner.Delete:
		names = []string{s.Table}
	case *planner.DropTable:
		names = s.Names
	case *planner.CreateView:
		names = []string{s.Name}
	case *planner.DropView:
		names = s.Names
	case *planner.CreateIndex:
		names = []string{s.Table}
	case *planner.DropIndex:
		if s.Table != "" {
			names = []string{s.Table}
		}
	case *planner.CreateTrigger:
		names = []string{s.Table}
	}
	out := make([]Target, 0, len(names))
	for _, name := range names {
		out = append(out, targetOf(tables, name))
	}
	return out
}

// TableTarget is the table a name a statement or a job spec makes or changes resolves to.
func (e *Engine) TableTarget(name string) Target { return targetOf(e.tables, name) }

// targetOf resolves a table name a statement changes; a name that does not resolve is taken as
// a name of the engine's own catalog, where DDL goes.
func targetOf(tables *catalog.Set, name string) Target {
	c, local, err := tables.Resolve(name)
	if err != nil || c == tables.Primary() {
		if err == nil {
			name = local
		}
		return Target{Catalog: tables.Name(), Name: name, Own: true}
	}
	base, _, _ := strings.Cut(local, "@")
	return Target{Catalog: c.Name(), Name: base}
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
