package sql

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// createTable binds CREATE TABLE name (columns …) and CREATE TABLE name AS SELECT …. PRIMARY
// KEY and UNIQUE keys are bound into Keys (see tableKeys); PRIMARY KEY and NOT NULL columns are
// not nullable. Column defaults, other indexes and table options are accepted and ignored.
func (b *binder) createTable(s *sqlparser.CreateTable) (planner.Statement, error) {
	if s.OptLike != nil {
		return nil, errs.Unsupportedf("CREATE TABLE … LIKE is not supported")
	}
	name, err := b.writableName(s.Table)
	if err != nil {
		return nil, err
	}
	out := &planner.CreateTable{Name: name, IfNotExists: s.IfNotExists}
	if s.Select != nil {
		if s.TableSpec != nil && len(s.TableSpec.Columns) > 0 {
			return nil, errs.Unsupportedf("CREATE TABLE with both column definitions and AS SELECT is not supported")
		}
		q, err := b.query(s.Select)
		if err != nil {
			return nil, err
		}
		fields := make([]arrow.Field, 0, len(q.Plan.Schema()))
		for _, c := range q.Plan.Schema() {
			fields = append(fields, arrow.Field{Name: c.Name, Type: c.Type, Nullable: true})
		}
		out.AsSelect = q
		out.AsSelectSQL = sqlparser.String(s.Select)
		out.Schema = arrow.NewSchema(fields, nil)
		return out, nil
	}
	if s.TableSpec == nil || len(s.TableSpec.Columns) == 0 {
		return nil, errs.Invalidf("A table must have at least 1 column")
	}
	seen := map[string]bool{}
	var fields []arrow.Field
	for _, col := range s.TableSpec.Columns {
		name := col.Name.String()
		if seen[strings.ToLower(name)] {
			return nil, errs.Invalidf("Duplicate column name '%s'", name)
		}
		seen[strings.ToLower(name)] = true
		t, err := columnType(col.Type)
		if err != nil {
			return nil, err
		}
		nullable := true
		if o := col.Type.Options; o != nil && o.Null != nil && !*o.Null {
			nullable = false
		}
		field := arrow.Field{Name: name, Type: t, Nullable: nullable}
		if decl := declaredType(col.Type); decl != "" {
			field.Metadata = arrow.NewMetadata([]string{exec.DeclaredTypeKey}, []string{decl})
		}
		fields = append(fields, field)
	}
	keys, err := tableKeys(s.TableSpec, arrow.NewSchema(fields, nil))
	if err != nil {
		return nil, err
	}
	out.Keys = keys
	out.Schema = withPrimaryKeyNotNull(arrow.NewSchema(fields, nil), keys)
	return out, nil
}

// dropTable binds DROP TABLE [IF EXISTS] t, ….
func (b *binder) dropTable(s *sqlparser.DropTable) (planner.Statement, error) {
	out := &planner.DropTable{IfExists: s.IfExists}
	for _, t := range s.FromTables {
		if b.inDatasetsSchema(t) {
			// datasets.t names a dataset, never a memory table of that name: look it up in the
			// engine's catalog by that schema (catalog.Set) before dropping it by its name.
			_, err := b.cat.Table(b.ctx, b.cat.Name()+"."+catalog.DatasetsSchema+"."+t.Name.String())
			if err == nil {
				out.Names = append(out.Names, t.Name.String())
			} else if !s.IfExists || errs.CategoryOf(err) != errs.NotFound {
				return nil, err
			}
			continue
		}
		name, err := b.writableName(t)
		if err != nil {
			return nil, err
		}
		out.Names = append(out.Names, name)
	}
	return out, nil
}

// insert binds INSERT [IGNORE] INTO t [(cols)] VALUES … | SELECT … and REPLACE INTO …, which
// vitess parses as an Insert with Action ReplaceAct. The source yields one column per target
// column, cast to the table column's type.
func (b *binder) insert(s *sqlparser.Insert) (planner.Statement, error) {
	onDuplicate := planner.DuplicateFails
	switch {
	case s.Action == sqlparser.ReplaceAct:
		onDuplicate = planner.DuplicateReplaces
	case bool(s.Ignore):
		onDuplicate = planner.DuplicateSkipped
	}
	if len(s.OnDup) > 0 {
		return nil, errs.Unsupportedf("INSERT … ON DUPLICATE KEY UPDATE is not supported")
	}
	tn, ok := s.Table.Expr.(sqlparser.TableName)
	if !ok {
		return nil, errs.Unsupportedf("INSERT into %s is not supported", sqlparser.String(s.Table))
	}
	name, err := b.writableName(tn)
	if err != nil {
		return nil, err
	}
	table, err := b.cat.Table(b.ctx, name)
	if err != nil {
		if isNotFound(err) {
			return nil, &errs.Error{Category: errs.NotFound, Msg: "Table '" + name + "' doesn't exist", Err: err}
		}
		return nil, err
	}
	schema := table.Schema()
	targets, err := insertColumns(schema, s.Columns)
	if err != nil {
		return nil, err
	}
	var source planner.Plan
	switch rows := s.Rows.(type) {
	case sqlparser.Values:
		source, err = b.insertValues(schema, targets, rows)
	case sqlparser.TableStatement:
		source, err = b.insertSelect(schema, targets, rows)
	default:
		err = errs.Unsupportedf("INSERT source %s is not supported", sqlparser.String(s.Rows))
	}
	if err != nil {
		return nil, err
	}
	return &planner.Insert{Table: table.Name(), Columns: targets, Source: &planner.Query{Plan: source, NumParams: b.numParams}, OnDuplicate: onDuplicate}, nil
}

// insertColumns maps the column list of an INSERT to table column indexes (all, in order, when
// the list is absent).
func insertColumns(schema *arrow.Schema, cols sqlparser.Columns) ([]int, error) {
	if len(cols) == 0 {
		out := make([]int, schema.NumFields())
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	used := map[int]bool{}
	var out []int
	for _, c := range cols {
		idx := -1
		for i, f := range schema.Fields() {
			if strings.EqualFold(f.Name, c.String()) {
				idx = i
				break
			}
		}
		if idx < 0 {
			return nil, errs.NotFoundf("Unknown column '%s' in 'field list'", c.String())
		}
		if used[idx] {
			return nil, errs.Invalidf("Column '%s' specified twice", c.String())
		}
		used[idx] = true
		out = append(out, idx)
	}
	return out, nil
}

// insertValues binds VALUES rows as a planner.Values. A column holds the common type of its
// values (the target column's type when all are untyped NULLs or parameters), not the target's:
// the engine converts them when it stores them, with strict-mode checks that a CAST here would
// hide ('x' into an integer column is an error, not 0).
func (b *binder) insertValues(schema *arrow.Schema, targets []int, rows sqlparser.Values) (planner.Plan, error) {
	ctx := &exprContext{scope: newScope(nil), clause: "field list"}
	bound := make([][]planner.Expr, len(rows))
	for i, row := range rows {
		if len(row) != len(targets) {
			return nil, errs.Invalidf("Column count doesn't match value count at row %d", i+1)
		}
		bound[i] = make([]planner.Expr, len(row))
		for j, e := range row {
			x, err := b.expr(e, ctx)
			if err != nil {
				return nil, err
			}
			bound[i][j] = x
		}
	}
	v := &planner.Values{}
	for j, t := range targets {
		f := schema.Field(t)
		typ := valuesColumnType(bound, j, f.Type)
		v.Columns = append(v.Columns, planner.Column{ID: b.newID(), Name: f.Name, Type: typ, Nullable: true})
	}
	for _, row := range bound {
		exprs := make([]planner.Expr, len(row))
		for j, x := range row {
			exprs[j] = castTo(x, v.Columns[j].Type)
		}
		v.Rows = append(v.Rows, exprs)
	}
	return v, nil
}

// valuesColumnType is the common type of column j of rows, or target when no value has a type
// (or the values have none in common, and each is cast to target).
func valuesColumnType(rows [][]planner.Expr, j int, target arrow.DataType) arrow.DataType {
	var types []arrow.DataType
	for _, row := range rows {
		if t := row[j].Type(); t.ID() != arrow.NULL {
			types = append(types, t)
		}
	}
	if len(types) == 0 {
		return target
	}
	t, err := exec.CommonType(types...)
	if err != nil || t.ID() == arrow.NULL {
		return target
	}
	return t
}

// insertSelect binds the query of INSERT … SELECT, naming its columns after the targets. Their
// values keep their types (untyped NULLs take the target's): the engine converts them when it
// stores them, with strict-mode checks (see insertValues).
func (b *binder) insertSelect(schema *arrow.Schema, targets []int, ts sqlparser.TableStatement) (planner.Plan, error) {
	p, err := b.tableStatement(ts, nil)
	if err != nil {
		return nil, err
	}
	in := p.Schema()
	if len(in) != len(targets) {
		return nil, errs.Invalidf("Column count doesn't match value count at row 1")
	}
	proj := &planner.Project{Input: p}
	for i, t := range targets {
		f := schema.Field(t)
		typ := in[i].Type
		if typ.ID() == arrow.NULL {
			typ = f.Type
		}
		proj.Exprs = append(proj.Exprs, castTo(columnRef(in[i]), typ))
		proj.Columns = append(proj.Columns, planner.Column{ID: b.newID(), Name: f.Name, Type: typ, Nullable: true})
	}
	return proj, nil
}

// castTo converts x to t unless it already has that type.
func castTo(x planner.Expr, t arrow.DataType) planner.Expr {
	if arrow.TypeEqual(x.Type(), t) {
		return x
	}
	return &planner.Cast{Expr: x, To: t}
}
