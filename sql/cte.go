package sql

import (
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
	"vitess.io/vitess/go/vt/sqlparser"
)

// cte is a common table expression in scope (WITH name [(columns)] AS (query)). Each reference
// binds its query again, like a derived table, under a planner.CTERef carrying key: the
// planner either plans every reference on its own or, when the CTE is referenced more than
// once, computes it once and shares it (see planner.PlanQuery).
type cte struct {
	name string
	key  *planner.CTEKey
	def  *sqlparser.CommonTableExpr
	// visible are the CTEs its query may name: those in scope where the WITH is, and the ones
	// before it in the same WITH. Not itself: without RECURSIVE, its own name in its query
	// means a table, as in MySQL.
	visible []*cte
}

// with brings w's CTEs into scope for the block being bound; the returned function ends their
// scope. A nil w changes nothing.
func (b *binder) with(w *sqlparser.With) (func(), error) {
	saved := b.ctes
	restore := func() { b.ctes = saved }
	if w == nil {
		return restore, nil
	}
	if w.Recursive {
		return nil, errs.Unsupportedf("WITH RECURSIVE is not supported")
	}
	seen := map[string]bool{}
	for _, def := range w.CTEs {
		name := def.ID.String()
		if seen[name] {
			return nil, errs.Invalidf("Duplicate query name '%s' in WITH clause", name)
		}
		seen[name] = true
		visible := b.ctes
		b.ctes = append(append([]*cte(nil), b.ctes...), &cte{name: name, key: &planner.CTEKey{Name: name}, def: def, visible: visible})
	}
	return restore, nil
}

// lookupCTE returns the innermost CTE in scope named name (names compare as MySQL compares
// table names on Linux: exactly), or nil.
func (b *binder) lookupCTE(name string) *cte {
	for i := len(b.ctes) - 1; i >= 0; i-- {
		if b.ctes[i].name == name {
			return b.ctes[i]
		}
	}
	return nil
}

// cteTable binds a reference to c under alias, adding its columns to sc. Like a derived table,
// it sees no enclosing scope.
func (b *binder) cteTable(c *cte, alias string, sc *scope) (planner.Plan, error) {
	saved := b.ctes
	b.ctes = c.visible
	p, err := b.tableStatement(c.def.Subquery, nil)
	b.ctes = saved
	if err != nil {
		return nil, err
	}
	cols := append([]planner.Column(nil), p.Schema()...)
	if len(c.def.Columns) > 0 && len(c.def.Columns) != len(cols) {
		return nil, errs.Invalidf("In definition of view, derived table or common table expression, SELECT list and column names list have different column counts")
	}
	for i := range cols {
		cols[i].Table = alias
		if len(c.def.Columns) > 0 {
			cols[i].Name = c.def.Columns[i].String()
		}
	}
	sc.add(alias, cols)
	return &planner.CTERef{Key: c.key, Input: p}, nil
}
