package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// InformationSchema is the name of the read-only catalog that describes every other one with
// MySQL's information_schema tables (schemata, tables, columns), their column names and shapes.
// A MySQL database is a place a table name can be qualified with (DatabaseName): a flat catalog
// (cachedb, system) or a namespace of a namespaced one (local.demo).
const InformationSchema = "information_schema"

// DatabaseName is the MySQL database name of namespace ns of c: c's name for a flat catalog
// (its one schema is PublicSchema), "catalog.namespace" otherwise. `database`.t names table t
// there, quoted or not.
func DatabaseName(c Catalog, ns string) string {
	if _, ok := c.(NamespacedCatalog); !ok {
		return c.Name()
	}
	return c.Name() + "." + ns
}

// MySQLType names an Arrow type as MySQL does in information_schema.columns: DATA_TYPE and
// COLUMN_TYPE. Types are those queries return: integers are read as bigint and floats as double
// (exec.CanonicalType).
func MySQLType(t arrow.DataType) (dataType, columnType string) {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return "bigint", "bigint"
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		return "double", "double"
	case arrow.BOOL:
		return "tinyint", "tinyint(1)"
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return "text", "text"
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY:
		return "blob", "blob"
	case arrow.DATE32, arrow.DATE64:
		return "date", "date"
	case arrow.TIMESTAMP:
		return "datetime", "datetime(6)"
	case arrow.TIME32, arrow.TIME64:
		return "time", "time(6)"
	case arrow.DECIMAL128, arrow.DECIMAL256:
		d := t.(arrow.DecimalType)
		return "decimal", fmt.Sprintf("decimal(%d,%d)", d.GetPrecision(), d.GetScale())
	}
	return "json", "json"
}

var (
	str   = arrow.BinaryTypes.String
	i64   = arrow.PrimitiveTypes.Int64
	field = func(name string, t arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: t, Nullable: true}
	}

	schemataSchema = arrow.NewSchema([]arrow.Field{
		field("CATALOG_NAME", str), field("SCHEMA_NAME", str), field("DEFAULT_CHARACTER_SET_NAME", str),
		field("DEFAULT_COLLATION_NAME", str), field("SQL_PATH", str), field("DEFAULT_ENCRYPTION", str),
	}, nil)
	tablesSchema = arrow.NewSchema([]arrow.Field{
		field("TABLE_CATALOG", str), field("TABLE_SCHEMA", str), field("TABLE_NAME", str), field("TABLE_TYPE", str),
		field("ENGINE", str), field("TABLE_ROWS", i64), field("TABLE_COMMENT", str),
	}, nil)
	columnsSchema = arrow.NewSchema([]arrow.Field{
		field("TABLE_CATALOG", str), field("TABLE_SCHEMA", str), field("TABLE_NAME", str), field("COLUMN_NAME", str),
		field("ORDINAL_POSITION", i64), field("COLUMN_DEFAULT", str), field("IS_NULLABLE", str), field("DATA_TYPE", str),
		field("CHARACTER_MAXIMUM_LENGTH", i64), field("NUMERIC_PRECISION", i64), field("NUMERIC_SCALE", i64),
		field("COLUMN_TYPE", str), field("COLUMN_KEY", str), field("EXTRA", str), field("COLUMN_COMMENT", str),
	}, nil)
	infoTables = map[string]*arrow.Schema{"schemata": schemataSchema, "tables": tablesSchema, "columns": columnsSchema}
)

// infoSchema is the information_schema catalog over a Set's catalogs.
type infoSchema struct{ set *Set }

func (c *infoSchema) Name() string { return InformationSchema }

func (c *infoSchema) TableNames(context.Context) ([]string, error) {
	return []string{"columns", "schemata", "tables"}, nil
}

func (c *infoSchema) Table(_ context.Context, name string) (Table, error) {
	schema, ok := infoTables[strings.ToLower(name)]
	if !ok {
		return nil, errs.NotFoundf("Table '%s.%s' doesn't exist: %s has the tables columns, schemata, tables", InformationSchema, name, InformationSchema)
	}
	return &infoTable{set: c.set, name: strings.ToLower(name), schema: schema}, nil
}

// infoTable is one information_schema table; its rows are the catalogs as they are when a scan
// opens it. A catalog that cannot be listed (unreachable) is left out.
type infoTable struct {
	set    *Set
	name   string
	schema *arrow.Schema
}

func (t *infoTable) Name() string          { return t.name }
func (t *infoTable) Schema() *arrow.Schema { return t.schema }

func (t *infoTable) Scan(_ context.Context, req ScanRequest) (*ScanPlan, error) {
	return &ScanPlan{Tasks: []ScanTask{&infoTask{t: t, cols: req.Columns}}}, nil
}

type infoTask struct {
	t    *infoTable
	cols []int
}

func (k *infoTask) EstimatedRows() int64 { return -1 }

// place is one database: a catalog and one of its schemas.
type place struct {
	c  Catalog
	ns string
}

// database is p's name as SHOW DATABASES lists it.
func (p place) database() string {
	if p.c.Name() == InformationSchema {
		return InformationSchema
	}
	return DatabaseName(p.c, p.ns)
}

// places lists the databases the Set shows its caller (SHOW DATABASES), information_schema last.
func (s *Set) places(ctx context.Context) []place {
	var out []place
	for _, c := range s.Catalogs() {
		if !s.listsCatalog(c) {
			continue
		}
		nc, ok := c.(NamespacedCatalog)
		if !ok {
			out = append(out, place{c, PublicSchema})
			continue
		}
		namespaces, err := nc.Namespaces(ctx)
		if err != nil {
			continue
		}
		for _, ns := range namespaces {
			out = append(out, place{c, ns})
		}
	}
	return append(out, place{&infoSchema{set: s}, PublicSchema})
}

// Database returns the database that name means where a statement names one (SHOW TABLES FROM
// name), as SHOW DATABASES lists it: the database of that name, or, as USE reads a name, a
// catalog's default namespace or a namespace of the catalog unqualified names resolve in
// ("local" and "demo" both mean local.demo when local is that catalog and demo its default);
// false when the caller is shown no such database.
func (s *Set) Database(ctx context.Context, name string) (string, bool) {
	var names []string
	for _, p := range s.places(ctx) {
		db := p.database()
		if strings.EqualFold(db, name) {
			return db, true
		}
		names = append(names, db)
	}
	// A catalog (its default namespace), or a namespace of the current catalog, as USE reads it.
	for _, as := range [][2]string{{name, ""}, {"", name}} {
		in, err := s.WithCurrent(as[0], as[1])
		if err != nil || in.current == nil {
			continue
		}
		if _, namespaced := in.current.(NamespacedCatalog); as[1] != "" && !namespaced {
			continue // a flat catalog has no namespaces to name
		}
		db := in.CurrentDatabase()
		for _, n := range names {
			if strings.EqualFold(n, db) {
				return n, true
			}
		}
	}
	return "", false
}

// tablesAt lists the tables of place p that the Set's guard lets the caller read, sorted.
func (k *infoTask) tablesAt(ctx context.Context, p place) []string {
	var names []string
	var err error
	nc, namespaced := p.c.(NamespacedCatalog)
	if namespaced {
		names, err = nc.TablesIn(ctx, p.ns)
	} else {
		names, err = p.c.TableNames(ctx)
	}
	if err != nil {
		return nil
	}
	names = slices.DeleteFunc(names, func(name string) bool {
		if namespaced {
			name = p.ns + "." + name
		}
		return !k.t.set.listsTable(p.c, name)
	})
	slices.Sort(names)
	return names
}

func (k *infoTask) Open(ctx context.Context, mem memory.Allocator) (array.RecordReader, error) {
	b := array.NewRecordBuilder(mem, k.t.schema)
	defer b.Release()
	s := func(i int, v string) { b.Field(i).(*array.StringBuilder).Append(v) }
	null := func(i int) { b.Field(i).AppendNull() }
	n := func(i int, v int64) { b.Field(i).(*array.Int64Builder).Append(v) }
	for _, p := range k.t.set.places(ctx) {
		db := p.database()
		if k.t.name == "schemata" {
			s(0, p.c.Name())
			s(1, db)
			s(2, "utf8mb4")
			s(3, "utf8mb4_0900_ai_ci")
			null(4)
			s(5, "NO")
			continue
		}
		for _, name := range k.tablesAt(ctx, p) {
			if k.t.name == "tables" {
				kind := "BASE TABLE"
				if p.c.Name() == InformationSchema {
					kind = "SYSTEM VIEW"
				}
				s(0, p.c.Name())
				s(1, db)
				s(2, name)
				s(3, kind)
				s(4, "cachedb")
				null(5)
				s(6, "")
				continue
			}
			qualified := name
			if _, ok := p.c.(NamespacedCatalog); ok {
				qualified = p.ns + "." + name
			}
			tbl, err := p.c.Table(ctx, qualified)
			if err != nil {
				continue
			}
			for i, f := range tbl.Schema().Fields() {
				dataType, columnType := MySQLType(f.Type)
				s(0, p.c.Name())
				s(1, db)
				s(2, name)
				s(3, f.Name)
				n(4, int64(i+1))
				null(5)
				s(6, map[bool]string{true: "YES", false: "NO"}[f.Nullable])
				s(7, dataType)
				null(8)
				if d, ok := f.Type.(arrow.DecimalType); ok {
					n(9, int64(d.GetPrecision()))
					n(10, int64(d.GetScale()))
				} else {
					null(9)
					null(10)
				}
				s(11, columnType)
				s(12, "")
				s(13, "")
				s(14, "")
			}
		}
	}
	full := b.NewRecordBatch()
	defer full.Release()
	cols := k.cols
	if cols == nil {
		for i := range k.t.schema.Fields() {
			cols = append(cols, i)
		}
	}
	fields := make([]arrow.Field, len(cols))
	arrays := make([]arrow.Array, len(cols))
	for i, c := range cols {
		fields[i], arrays[i] = full.Schema().Field(c), full.Column(c)
	}
	out := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrays, full.NumRows())
	defer out.Release()
	return array.NewRecordReader(out.Schema(), []arrow.RecordBatch{out})
}
