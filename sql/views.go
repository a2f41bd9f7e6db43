package sql

import (
	"fmt"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// maxViewDepth bounds view expansion, so that a view defined in terms of itself (through
// CREATE OR REPLACE) fails cleanly instead of recursing forever.
const maxViewDepth = 32

func (b *binder) createView(s *sqlparser.CreateView) (planner.Statement, error) {
	if _, ok := b.cat.(catalog.ViewCatalog); !ok {
		return nil, errs.Unsupportedf("catalog %s does not store views", b.cat.Name())
	}
	query := sqlparser.String(s.Select)
	if len(s.Columns) > 0 {
		cols := make([]string, len(s.Columns))
		for i, c := range s.Columns {
			cols[i] = sqlparser.String(c)
		}
		query = fmt.Sprintf("SELECT * FROM (%s) AS %s (%s)", query,
			sqlparser.String(s.ViewName.Name), strings.Join(cols, ", "))
	}
	// Bind once now, so that a view over unknown tables or columns is refused when created.
	if _, err := b.subQuery(query); err != nil {
		return nil, err
	}
	return &planner.CreateView{Name: s.ViewName.Name.String(), Query: query, OrReplace: s.IsReplace}, nil
}

func (b *binder) dropView(s *sqlparser.DropView) planner.Statement {
	names := make([]string, len(s.FromTables))
	for i, t := range s.FromTables {
		names[i] = t.Name.String()
	}
	return &planner.DropView{Names: names, IfExists: s.IfExists}
}

// view binds a reference to a view as a derived table, or returns nil when name is no view.
func (b *binder) view(name, alias string, sc *scope) (planner.Plan, error) {
	vc, ok := b.cat.(catalog.ViewCatalog)
	if !ok {
		return nil, nil
	}
	query, ok := vc.View(b.ctx, name)
	if !ok {
		return nil, nil
	}
	if b.viewDepth >= maxViewDepth {
		return nil, errs.Invalidf("view %s refers to itself", name)
	}
	stmt, err := parse(query)
	if err != nil {
		return nil, errs.Internalf("stored view %s does not parse: %v", name, err)
	}
	ts, ok := stmt.(sqlparser.TableStatement)
	if !ok {
		return nil, errs.Internalf("stored view %s is not a query", name)
	}
	b.viewDepth++
	p, err := b.tableStatement(ts, nil)
	b.viewDepth--
	if err != nil {
		return nil, err
	}
	cols := append([]planner.Column(nil), p.Schema()...)
	for i := range cols {
		cols[i].Table = alias
	}
	sc.add(alias, cols)
	return p, nil
}

// indexDDL binds CREATE INDEX and DROP INDEX, which vitess parses as ALTER TABLE with a single
// add-index or drop-key option. ok is false for any other ALTER TABLE.
func (b *binder) indexDDL(s *sqlparser.AlterTable) (st planner.Statement, ok bool, err error) {
	if len(s.AlterOptions) != 1 {
		return nil, false, nil
	}
	table := s.Table.Name.String()
	switch o := s.AlterOptions[0].(type) {
	case *sqlparser.AddIndexDefinition:
		return &planner.CreateIndex{Table: table, Name: o.IndexDefinition.Info.Name.String()}, true, nil
	case *sqlparser.DropKey:
		return &planner.DropIndex{Table: table, Name: o.Name.String()}, true, nil
	}
	return nil, false, nil
}
