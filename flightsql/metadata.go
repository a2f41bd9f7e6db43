package flightsql

import (
	"context"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
)

// tableType is the only kind of table the catalog holds.
const tableType = "TABLE"

// GetFlightInfoCatalogs implements fsql.Server.
func (s *Server) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.commandInfo(desc, schema_ref.Catalogs), nil
}

// DoGetCatalogs lists every catalog: the engine's own and the configured sources (those the
// caller may read some table of, when grants decide what they read).
func (s *Server) DoGetCatalogs(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.opts.Alloc, schema_ref.Catalogs)
	defer b.Release()
	for _, c := range s.matchingCatalogs(ctx, nil) {
		b.Field(0).(*array.StringBuilder).Append(c.Name())
	}
	return s.oneBatch(b)
}

// GetFlightInfoSchemas implements fsql.Server.
func (s *Server) GetFlightInfoSchemas(_ context.Context, _ fsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.commandInfo(desc, schema_ref.DBSchemas), nil
}

// DoGetDBSchemas lists the db schemas that pass the filters: "public" for the engine's own
// catalog, the namespaces of each Iceberg catalog. A catalog that cannot be reached is left out
// of the listing (and logged) rather than failing it.
func (s *Server) DoGetDBSchemas(ctx context.Context, cmd fsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.opts.Alloc, schema_ref.DBSchemas)
	defer b.Release()
	for _, c := range s.matchingCatalogs(ctx, cmd.GetCatalog()) {
		for _, schema := range s.schemasOf(ctx, c) {
			if matchPattern(cmd.GetDBSchemaFilterPattern(), schema) {
				b.Field(0).(*array.StringBuilder).Append(c.Name())
				b.Field(1).(*array.StringBuilder).Append(schema)
			}
		}
	}
	return s.oneBatch(b)
}

// GetFlightInfoTables implements fsql.Server.
func (s *Server) GetFlightInfoTables(_ context.Context, cmd fsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if cmd.GetIncludeSchema() {
		return s.commandInfo(desc, schema_ref.TablesWithIncludedSchema), nil
	}
	return s.commandInfo(desc, schema_ref.Tables), nil
}

// DoGetTables lists the tables that pass the filters, by catalog, schema and name, each with
// its Arrow schema as queries return it (querySchema; IPC-serialized) when include_schema is set. A table that fails to load
// (a missing metadata file, say) is listed without its schema rather than failing the call.
func (s *Server) DoGetTables(ctx context.Context, cmd fsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	schema := schema_ref.Tables
	if cmd.GetIncludeSchema() {
		schema = schema_ref.TablesWithIncludedSchema
	}
	b := array.NewRecordBuilder(s.opts.Alloc, schema)
	defer b.Release()

	guard := s.guardOf(ctx)
	types := cmd.GetTableTypes()
	if len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return matchPattern(&t, tableType) }) {
		return s.oneBatch(b)
	}
	for _, c := range s.matchingCatalogs(ctx, cmd.GetCatalog()) {
		for _, dbSchema := range s.schemasOf(ctx, c) {
			if !matchPattern(cmd.GetDBSchemaFilterPattern(), dbSchema) {
				continue
			}
			names, err := s.tablesOf(ctx, c, dbSchema)
			if err != nil {
				s.opts.Logger.Warn("list tables", "catalog", c.Name(), "schema", dbSchema, "err", err)
				continue
			}
			for _, name := range names {
				if !matchPattern(cmd.GetTableNameFilterPattern(), name) {
					continue
				}
				if guard != nil && guard.Read(c.Name(), qualifiedIn(c, dbSchema, name), c == s.eng.Catalogs().Primary()) != nil {
					continue
				}
				var tableSchema []byte
				if cmd.GetIncludeSchema() {
					t, err := c.Table(ctx, qualifiedIn(c, dbSchema, name))
					if errs.CategoryOf(err) == errs.NotFound && !isNamespaced(c) {
						continue // dropped since it was listed
					} else if err != nil {
						s.opts.Logger.Warn("load table", "catalog", c.Name(), "table", name, "err", err)
						tableSchema = flight.SerializeSchema(arrow.NewSchema(nil, nil), s.opts.Alloc)
					} else {
						tableSchema = flight.SerializeSchema(querySchema(t.Schema()), s.opts.Alloc)
					}
				}
				b.Field(0).(*array.StringBuilder).Append(c.Name())
				b.Field(1).(*array.StringBuilder).Append(dbSchema)
				b.Field(2).(*array.StringBuilder).Append(name)
				b.Field(3).(*array.StringBuilder).Append(tableType)
				if cmd.GetIncludeSchema() {
					b.Field(4).(*array.BinaryBuilder).Append(tableSchema)
				}
			}
		}
	}
	return s.oneBatch(b)
}

// querySchema is a table's schema with each column typed as a query reads it: scans widen
// narrow integers and floats to the engine's canonical int64 and float64 (exec.CanonicalType),
// so the types listed agree with the types SELECT * returns (a dataset stores narrow types too).
func querySchema(s *arrow.Schema) *arrow.Schema {
	fields := s.Fields()
	for i := range fields {
		fields[i].Type = exec.CanonicalType(fields[i].Type)
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// matchingCatalogs returns the catalogs a catalog filter admits: no filter admits all, an empty
// string asks for objects without a catalog (none), otherwise the names must match. A caller
// whose grants decide what they read (guardOf) gets only the catalogs they may read some table
// of.
func (s *Server) matchingCatalogs(ctx context.Context, filter *string) []catalog.Catalog {
	guard := s.guardOf(ctx)
	primary := s.eng.Catalogs().Primary()
	var out []catalog.Catalog
	for _, c := range s.eng.Catalogs().Catalogs() {
		if guard != nil && !guard.Lists(c.Name(), c == primary) {
			continue
		}
		if filter == nil || strings.EqualFold(*filter, c.Name()) {
			out = append(out, c)
		}
	}
	return out
}

// schemasOf lists a catalog's db schemas: its namespaces, or PublicSchema for a flat catalog;
// the engine's own catalog also has DatasetsSchema on a head with data nodes (its datasets, as
// listed in PublicSchema too: clients that look for a dataset where they ingested it, as
// pandas' to_sql(schema="datasets") does, find it there).
func (s *Server) schemasOf(ctx context.Context, c catalog.Catalog) []string {
	nc, ok := c.(catalog.NamespacedCatalog)
	if !ok {
		if c == s.eng.Catalogs().Primary() && s.opts.DataNodes != nil {
			return []string{PublicSchema, catalog.DatasetsSchema}
		}
		return []string{PublicSchema}
	}
	namespaces, err := nc.Namespaces(ctx)
	if err != nil {
		s.opts.Logger.Warn("list namespaces", "catalog", c.Name(), "err", err)
		return nil
	}
	return namespaces
}

// tablesOf lists the tables of one db schema of c.
func (s *Server) tablesOf(ctx context.Context, c catalog.Catalog, schema string) ([]string, error) {
	if nc, ok := c.(catalog.NamespacedCatalog); ok {
		return nc.TablesIn(ctx, schema)
	}
	if schema == catalog.DatasetsSchema && c == s.eng.Catalogs().Primary() {
		var names []string
		for _, d := range s.eng.MemoryCatalog().Datasets() {
			names = append(names, d.Name())
		}
		return names, nil
	}
	return c.TableNames(ctx)
}

func isNamespaced(c catalog.Catalog) bool {
	_, ok := c.(catalog.NamespacedCatalog)
	return ok
}

// qualifiedIn is the name c knows table name of db schema by.
func qualifiedIn(c catalog.Catalog, schema, name string) string {
	if isNamespaced(c) {
		return schema + "." + name
	}
	return name
}

// GetFlightInfoTableTypes implements fsql.Server.
func (s *Server) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.commandInfo(desc, schema_ref.TableTypes), nil
}

// DoGetTableTypes lists "TABLE".
func (s *Server) DoGetTableTypes(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.opts.Alloc, schema_ref.TableTypes)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append(tableType)
	return s.oneBatch(b)
}

// GetFlightInfoPrimaryKeys implements fsql.Server.
func (s *Server) GetFlightInfoPrimaryKeys(_ context.Context, _ fsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.commandInfo(desc, schema_ref.PrimaryKeys), nil
}

// DoGetPrimaryKeys is always empty: tables have no primary keys.
func (s *Server) DoGetPrimaryKeys(context.Context, fsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.opts.Alloc, schema_ref.PrimaryKeys)
	defer b.Release()
	return s.oneBatch(b)
}

// oneBatch streams the builder's rows as a single batch.
func (s *Server) oneBatch(b *array.RecordBuilder) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	rec := b.NewRecordBatch()
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: rec}
	close(ch)
	return rec.Schema(), ch, nil
}
