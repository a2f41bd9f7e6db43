package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/catalog"
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// IfTableMissing says what a bulk ingest does when its table does not exist.
type IfTableMissing int

const (
	// MissingFails fails the ingest (ADBC mode "append").
	MissingFails IfTableMissing = iota
	// MissingCreates creates the table from the data's schema ("create", "replace",
	// "create_append").
	MissingCreates
)

// IfTableExists says what a bulk ingest does when its table exists.
type IfTableExists int

const (
	// ExistingFails fails the ingest ("create").
	ExistingFails IfTableExists = iota
	// ExistingAppends adds the rows to the table ("append", "create_append").
	ExistingAppends
	// ExistingReplaced drops the table and creates it again from the data ("replace").
	ExistingReplaced
)

// IngestRequest describes a bulk ingest: rows a client sends to be stored in a memory table
// (Flight SQL CommandStatementIngest; ADBC adbc_ingest, pandas to_sql, polars write_database).
type IngestRequest struct {
	// Catalog and Schema qualify Table as Flight SQL metadata lists tables ("" for none); only
	// the engine's own catalog (and its schema "public") takes writes.
	Catalog, Schema, Table string
	IfMissing              IfTableMissing
	IfExists               IfTableExists
}

// Ingest stores the batches of rdr in the memory table req names and returns the number of
// rows stored. Columns are first brought to the engine's canonical types (exec.IngestArray);
// a table the ingest creates has those types. Appending maps columns to the table's by name
// (case-insensitively; table columns the data lacks are NULL) and converts values as INSERT
// does (convertBatches, MySQL's strict mode), with rows numbered across the whole ingest.
//
// All or nothing: every batch is read and converted before the table changes, so a bad batch,
// a failed conversion, a duplicate key or a client that goes away leaves the table as it was.
// Creating and replacing publish the whole new table in one step (memory.Catalog.PutTable);
// appending adds all rows in one insert. Ingests are serialized with the engine's other writes.
func (e *Engine) Ingest(ctx context.Context, req IngestRequest, rdr array.RecordReader) (int64, error) {
	if e.IngestMakesDataset(req) {
		return e.ingestDataset(ctx, req, rdr)
	}
	name, err := e.ingestTarget(req)
	if err != nil {
		return 0, err
	}
	schema, err := ingestSchema(rdr.Schema())
	if err != nil {
		return 0, err
	}
	// Refuse before reading any rows when the table already decides the outcome.
	if t, err := e.ingestTable(ctx, name, req); err != nil {
		return 0, err
	} else if t != nil && req.IfExists == ExistingAppends {
		if _, err := ingestColumns(name, t.Schema(), schema); err != nil {
			return 0, err
		}
	}
	batches, err := e.readIngest(ctx, rdr, schema)
	if err != nil {
		return 0, err
	}
	defer releaseAll(batches)

	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	existing, err := e.ingestTable(ctx, name, req)
	if err != nil {
		return 0, err
	}
	if existing != nil && req.IfExists == ExistingAppends {
		cols, err := ingestColumns(name, existing.Schema(), schema)
		if err != nil {
			return 0, err
		}
		return appendBatches(ctx, existing, batches, cols, planner.DuplicateFails, e.cfg.Alloc)
	}
	tableSchema := nullableSchema(schema)
	converted, rows, err := convertBatches(ctx, tableSchema, batches, nil, e.cfg.Alloc)
	if err != nil {
		return 0, err
	}
	defer releaseAll(converted)
	if _, err := e.catalog.PutTable(ctx, name, tableSchema, converted, existing != nil); err != nil {
		return 0, err
	}
	return rows, nil
}

// IngestTarget is the table a bulk ingest of req writes to, so that a server can check that its
// caller may change it; a request naming no writable table is an error, as Ingest reports it.
func (e *Engine) IngestTarget(req IngestRequest) (Target, error) {
	name, err := e.ingestTarget(req)
	if err != nil {
		return Target{}, err
	}
	return Target{Catalog: e.tables.Name(), Name: name, Own: true}, nil
}

// ingestTarget resolves the table an ingest writes to its name in the engine's catalog, by the
// rules names follow everywhere (catalog.Set): no qualifier, the engine's catalog, its schema
// "public" or both. A source catalog is read-only.
func (e *Engine) ingestTarget(req IngestRequest) (string, error) {
	if req.Table == "" {
		return "", errs.Invalidf("bulk ingest needs the name of its table")
	}
	if strings.ContainsAny(req.Table, ".@") {
		return "", errs.Invalidf("table name %q cannot be used: '.' and '@' separate catalog, schema, table and version in cachedb's names", req.Table)
	}
	if req.Catalog != "" {
		c, ok := e.tables.Lookup(req.Catalog)
		if !ok {
			return "", errs.NotFoundf("Unknown catalog '%s'", req.Catalog)
		}
		if c == e.tables.Primary() && req.Schema != "" && !strings.EqualFold(req.Schema, catalog.PublicSchema) {
			return "", errs.NotFoundf("Unknown database '%s.%s': catalog %s has one schema, %s", req.Catalog, req.Schema, c.Name(), catalog.PublicSchema)
		}
	}
	qualifier := req.Catalog
	if req.Schema != "" {
		if qualifier != "" {
			qualifier += "."
		}
		qualifier += req.Schema
	}
	if qualifier == "" {
		return req.Table, nil
	}
	full := qualifier + "." + req.Table
	c, local, err := e.tables.Resolve(full)
	if err != nil {
		return "", err
	}
	if c != e.tables.Primary() {
		return "", errs.Unsupportedf("table %s is read-only: bulk ingest, CREATE, INSERT, UPDATE, DELETE and DROP work on tables of catalog %s", full, e.tables.Name())
	}
	return local, nil
}

// ingestSchema is the schema the data is stored in: each column of its canonical type, names
// present and distinct (case-insensitively, as MySQL compares column names).
func ingestSchema(data *arrow.Schema) (*arrow.Schema, error) {
	if data.NumFields() == 0 {
		return nil, errs.Invalidf("A table must have at least 1 column: the ingested data has none")
	}
	seen := make(map[string]bool, data.NumFields())
	fields := make([]arrow.Field, data.NumFields())
	for i, f := range data.Fields() {
		if f.Name == "" {
			return nil, errs.Invalidf("Incorrect column name '': column %d of the ingested data has no name", i+1)
		}
		key := strings.ToLower(f.Name)
		if seen[key] {
			return nil, errs.Invalidf("Duplicate column name '%s'", f.Name)
		}
		seen[key] = true
		t, err := exec.IngestType(f.Name, f.Type)
		if err != nil {
			return nil, err
		}
		fields[i] = arrow.Field{Name: f.Name, Type: t, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// ingestTable returns the memory table an ingest appends to or replaces (nil when there is
// none and the ingest creates it), or the error the table's state gives the request.
func (e *Engine) ingestTable(ctx context.Context, name string, req IngestRequest) (*memcat.Table, error) {
	if _, isView := e.catalog.View(ctx, name); isView {
		return nil, errs.AlreadyExistsf("%q is a view: bulk ingest writes tables", name)
	}
	t, err := e.catalog.Table(ctx, name)
	if errs.CategoryOf(err) == errs.NotFound {
		if req.IfMissing != MissingCreates {
			return nil, errs.NotFoundf("Table '%s' doesn't exist", name)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	mt, ok := t.(*memcat.Table)
	switch {
	case req.IfExists == ExistingFails:
		return nil, errs.AlreadyExistsf("Table '%s' already exists", name)
	case !ok:
		return nil, errs.Unsupportedf("%q is a dataset, held by the data nodes: bulk ingest into it names schema %s (ADBC db_schema_name, pandas schema=); without it, ingest writes memory tables", name, catalog.DatasetsSchema)
	}
	return mt, nil
}

// ingestColumns maps the data's columns to the table's by name: cols[i] is the table column
// data column i fills.
func ingestColumns(table string, tableSchema, data *arrow.Schema) ([]int, error) {
	cols := make([]int, data.NumFields())
	for i, f := range data.Fields() {
		cols[i] = -1
		for j, tf := range tableSchema.Fields() {
			if strings.EqualFold(tf.Name, f.Name) {
				cols[i] = j
				break
			}
		}
		if cols[i] < 0 {
			return nil, errs.Invalidf("Unknown column '%s' in table '%s': appending maps the data's columns to the table's by name", f.Name, table)
		}
	}
	return cols, nil
}

// readIngest reads every batch of rdr and converts it to schema (exec.IngestArray), cut into
// slices of at most the engine's batch size (a client may send a whole DataFrame as one batch;
// a table of such slices scans in parallel, as tables INSERT fills do). The caller releases the
// result. On any error nothing is kept.
func (e *Engine) readIngest(ctx context.Context, rdr array.RecordReader, schema *arrow.Schema) (out []arrow.RecordBatch, err error) {
	defer func() {
		if err != nil {
			releaseAll(out)
			out = nil
		}
	}()
	tc := e.taskContext(ctx, nil)
	defer tc.Cache.Release()
	var rows int64
	for rdr.Next() {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		b := rdr.RecordBatch()
		if int(b.NumCols()) != schema.NumFields() {
			return out, errs.Invalidf("batch %d has %d columns, the ingest's schema %d", len(out)+1, b.NumCols(), schema.NumFields())
		}
		cols := make([]arrow.Array, b.NumCols())
		for i, c := range b.Columns() {
			if cols[i], err = ingestColumn(ctx, tc, c, schema.Field(i), rows+1); err != nil {
				releaseColumns(cols)
				return out, err
			}
		}
		rec := array.NewRecordBatch(schema, cols, b.NumRows())
		releaseColumns(cols)
		out = appendSlices(out, rec, int64(e.cfg.BatchSize))
		rows += b.NumRows()
	}
	if err := rdr.Err(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return out, ctxErr
		}
		return out, fmt.Errorf("reading the ingested batches: %w", err)
	}
	return out, ctx.Err()
}

// ingestColumn brings column c of an ingest to field's type: checked and kept when it has that
// type and is one scans widen exactly (a dataset's narrow column, planner.NarrowTypes),
// converted to its canonical type otherwise (exec.IngestArray).
func ingestColumn(ctx context.Context, tc *exec.TaskContext, c arrow.Array, field arrow.Field, firstRow int64) (arrow.Array, error) {
	if arrow.TypeEqual(c.DataType(), field.Type) && slices.ContainsFunc(planner.NarrowTypes, func(t arrow.DataType) bool { return arrow.TypeEqual(t, field.Type) }) {
		if err := exec.ValidateIngested(c, field.Name, firstRow); err != nil {
			return nil, err
		}
		c.Retain()
		return c, nil
	}
	return exec.IngestArray(ctx, tc, c, field.Name, firstRow)
}

// appendSlices appends rec to out in zero-copy slices of at most size rows, handing over rec's
// reference.
func appendSlices(out []arrow.RecordBatch, rec arrow.RecordBatch, size int64) []arrow.RecordBatch {
	n := rec.NumRows()
	if n <= size {
		return append(out, rec)
	}
	for off := int64(0); off < n; off += size {
		out = append(out, rec.NewSlice(off, min(off+size, n)))
	}
	rec.Release()
	return out
}
