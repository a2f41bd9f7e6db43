package flightsql

import (
	"context"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"

	"github.com/cachedb/cachedb/internal/errs"
)

// tableType is the only kind of table the catalog holds.
const tableType = "TABLE"

// GetFlightInfoCatalogs implements fsql.Server.
func (s *Server) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.commandInfo(desc, schema_ref.Catalogs), nil
}

// DoGetCatalogs lists the one catalog.
func (s *Server) DoGetCatalogs(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.opts.Alloc, schema_ref.Catalogs)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append(s.catalogName())
	return s.oneBatch(b)
}

// GetFlightInfoSchemas implements fsql.Server.
func (s *Server) GetFlightInfoSchemas(_ context.Context, _ fsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.commandInfo(desc, schema_ref.DBSchemas), nil
}

// DoGetDBSchemas lists the "public" schema when the filters admit it.
func (s *Server) DoGetDBSchemas(_ context.Context, cmd fsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.opts.Alloc, schema_ref.DBSchemas)
	defer b.Release()
	if s.catalogMatches(cmd.GetCatalog()) && matchPattern(cmd.GetDBSchemaFilterPattern(), PublicSchema) {
		b.Field(0).(*array.StringBuilder).Append(s.catalogName())
		b.Field(1).(*array.StringBuilder).Append(PublicSchema)
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

// DoGetTables lists the tables that pass the filters, sorted by name, each with its Arrow
// schema (IPC-serialized) when include_schema is set.
func (s *Server) DoGetTables(ctx context.Context, cmd fsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	schema := schema_ref.Tables
	if cmd.GetIncludeSchema() {
		schema = schema_ref.TablesWithIncludedSchema
	}
	b := array.NewRecordBuilder(s.opts.Alloc, schema)
	defer b.Release()

	types := cmd.GetTableTypes()
	typeOK := len(types) == 0 || slices.ContainsFunc(types, func(t string) bool { return matchPattern(&t, tableType) })
	if typeOK && s.catalogMatches(cmd.GetCatalog()) && matchPattern(cmd.GetDBSchemaFilterPattern(), PublicSchema) {
		cat := s.eng.Catalog()
		names, err := cat.TableNames(ctx)
		if err != nil {
			return nil, nil, err
		}
		for _, name := range names {
			if !matchPattern(cmd.GetTableNameFilterPattern(), name) {
				continue
			}
			var tableSchema []byte
			if cmd.GetIncludeSchema() {
				t, err := cat.Table(ctx, name)
				if errs.CategoryOf(err) == errs.NotFound {
					continue // dropped since it was listed
				} else if err != nil {
					return nil, nil, err
				}
				tableSchema = flight.SerializeSchema(t.Schema(), s.opts.Alloc)
			}
			b.Field(0).(*array.StringBuilder).Append(s.catalogName())
			b.Field(1).(*array.StringBuilder).Append(PublicSchema)
			b.Field(2).(*array.StringBuilder).Append(name)
			b.Field(3).(*array.StringBuilder).Append(tableType)
			if cmd.GetIncludeSchema() {
				b.Field(4).(*array.BinaryBuilder).Append(tableSchema)
			}
		}
	}
	return s.oneBatch(b)
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

// catalogMatches reports whether a catalog filter admits our catalog: no filter does, an
// empty string asks for objects without a catalog (none), otherwise the names must match.
func (s *Server) catalogMatches(catalog *string) bool {
	return catalog == nil || *catalog == s.catalogName()
}

// oneBatch streams the builder's rows as a single batch.
func (s *Server) oneBatch(b *array.RecordBuilder) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	rec := b.NewRecordBatch()
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: rec}
	close(ch)
	return rec.Schema(), ch, nil
}
