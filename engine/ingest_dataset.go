package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/util"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/internal/errs"
)

// IngestMakesDataset reports whether req names a dataset rather than a memory table: its db
// schema is catalog.DatasetsSchema ("datasets"), in the engine's catalog or no catalog (ADBC
// adbc_ingest(..., db_schema_name="datasets"), pandas to_sql(..., schema="datasets"), polars
// write_database("datasets.t")).
func (e *Engine) IngestMakesDataset(req IngestRequest) bool {
	return strings.EqualFold(req.Schema, catalog.DatasetsSchema) && (req.Catalog == "" || strings.EqualFold(req.Catalog, e.tables.Name()))
}

// ingestDataset stores the batches of rdr as a dataset held by the data nodes (cluster.Datasets
// .Ingest): the rows are read and checked whole first, cut into partitions of whole batches
// balanced by bytes (as many as a loaded dataset gets), and handed to the nodes; the dataset
// appears, or is replaced, only when every partition is held. Columns keep narrow integer and
// float32 types as sent (scans widen them, as they do a dataset's stored columns); every other
// type is converted as for a memory table.
//
// Appending makes a new generation holding the dataset's rows, read back from the nodes, and
// then the new ones: it costs a read of the whole dataset, and the data must have the
// dataset's columns (by name, case-insensitively, in any order; missing ones are NULL) in their
// held types.
func (e *Engine) ingestDataset(ctx context.Context, req IngestRequest, rdr array.RecordReader) (int64, error) {
	if e.datasets == nil {
		return 0, errs.Unsupportedf("ingest into schema %s makes a dataset, held by data nodes: this server has none (cachedb serve --workers N, or cachedb head with workers)", catalog.DatasetsSchema)
	}
	name := req.Table
	if name == "" {
		return 0, errs.Invalidf("bulk ingest needs the name of its dataset")
	}
	if strings.ContainsAny(name, ".@") {
		return 0, errs.Invalidf("dataset name %q cannot be used: '.' and '@' separate catalog, schema, table and version in cachedb's names", name)
	}
	schema, err := heldIngestSchema(rdr.Schema())
	if err != nil {
		return 0, err
	}
	existing, exists := e.datasets.Lookup(name)
	if !exists {
		if _, err := e.catalog.Table(ctx, name); err == nil {
			return 0, errs.AlreadyExistsf("table %q is a memory table: bulk ingest into schema %s makes datasets (DROP TABLE it first, or ingest under another name)", name, catalog.DatasetsSchema)
		}
		if _, isView := e.catalog.View(ctx, name); isView {
			return 0, errs.AlreadyExistsf("%q is a view: bulk ingest into schema %s makes datasets", name, catalog.DatasetsSchema)
		}
	}
	switch {
	case exists && req.IfExists == ExistingFails:
		return 0, errs.AlreadyExistsf("Dataset '%s' already exists", name)
	case !exists && req.IfMissing == MissingFails:
		return 0, errs.NotFoundf("Dataset '%s' doesn't exist", name)
	}
	appending := exists && req.IfExists == ExistingAppends
	var cols []int
	if appending {
		ds, ok := e.catalog.Dataset(name)
		if !ok || ds.Generation() != existing.Generation {
			return 0, errs.Unavailablef("dataset %q was replaced or dropped while the ingest started; ingest again", name)
		}
		if cols, err = datasetColumns(name, ds.Schema(), schema); err != nil {
			return 0, err
		}
		schema = ds.Schema()
	}
	batches, err := e.readIngestInto(ctx, rdr, schema, cols)
	if err != nil {
		return 0, err
	}
	defer releaseAll(batches)
	var rows int64
	for _, b := range batches {
		rows += b.NumRows()
	}
	all := batches
	job := cluster.IngestJob{Name: name, Replace: exists, Schema: schema, Source: fmt.Sprintf("bulk ingest (%s)", ingestVerb(req, exists))}
	if appending {
		old, err := e.readDataset(ctx, name, existing.Generation)
		if err != nil {
			return 0, err
		}
		defer releaseAll(old)
		all = append(old, batches...)
		// A write of the dataset since it was read would be lost: the append then fails.
		job.Replaces = existing.Generation
	}
	job.Parts = e.partitionBatches(all)
	if _, err := e.datasets.Ingest(ctx, job, nil); err != nil {
		return 0, err
	}
	return rows, nil
}

// ingestVerb says what an ingest did, for system.datasets' source.
func ingestVerb(req IngestRequest, existed bool) string {
	switch {
	case !existed:
		return "create"
	case req.IfExists == ExistingAppends:
		return "append"
	}
	return "replace"
}

// heldIngestSchema is the schema an ingested dataset holds the data in: narrow integers and
// float32 as sent, every other column of its canonical type (ingestSchema).
func heldIngestSchema(data *arrow.Schema) (*arrow.Schema, error) {
	schema, err := ingestSchema(data)
	if err != nil {
		return nil, err
	}
	fields := schema.Fields()
	for i, f := range data.Fields() {
		if t, ok := storedTypes[f.Type.Name()]; ok && arrow.TypeEqual(t, f.Type) {
			fields[i].Type = t
		}
	}
	return arrow.NewSchema(fields, nil), nil
}

// datasetColumns maps the data's columns to an existing dataset's by name, requiring each to
// have the type the dataset holds the column in: cols[i] is the dataset column data column i
// fills.
func datasetColumns(name string, held, data *arrow.Schema) ([]int, error) {
	cols, err := ingestColumns(name, held, data)
	if err != nil {
		return nil, err
	}
	for i, c := range cols {
		if want, got := held.Field(c).Type, data.Field(i).Type; !arrow.TypeEqual(want, got) {
			return nil, errs.Invalidf("column '%s' of dataset '%s' is held as %s; the data's is %s: appending to a dataset takes its columns' types", held.Field(c).Name, name, want, got)
		}
	}
	return cols, nil
}

// readIngestInto reads the batches of rdr as readIngest does (schema is then the data's), or,
// with cols, into the columns of a dataset's schema: data column i fills column cols[i], and a
// column no data column fills is NULL.
func (e *Engine) readIngestInto(ctx context.Context, rdr array.RecordReader, schema *arrow.Schema, cols []int) ([]arrow.RecordBatch, error) {
	if cols == nil {
		return e.readIngest(ctx, rdr, schema)
	}
	dataSchema := make([]arrow.Field, len(cols))
	for i, c := range cols {
		dataSchema[i] = schema.Field(c)
		dataSchema[i].Name = rdr.Schema().Field(i).Name
	}
	read, err := e.readIngest(ctx, rdr, arrow.NewSchema(dataSchema, nil))
	if err != nil {
		return nil, err
	}
	defer releaseAll(read)
	out := make([]arrow.RecordBatch, 0, len(read))
	for _, b := range read {
		arrays := make([]arrow.Array, schema.NumFields())
		for i, c := range cols {
			arrays[c] = b.Column(i)
			arrays[c].Retain()
		}
		for i, a := range arrays {
			if a == nil {
				arrays[i] = array.MakeArrayOfNull(e.cfg.Alloc, schema.Field(i).Type, int(b.NumRows()))
			}
		}
		out = append(out, array.NewRecordBatch(schema, arrays, b.NumRows()))
		releaseColumns(arrays)
	}
	return out, nil
}

// readDataset reads every row of generation gen of the named dataset from the nodes, partition
// after partition; the caller releases the batches.
func (e *Engine) readDataset(ctx context.Context, name string, gen uint64) (out []arrow.RecordBatch, err error) {
	ds, ok := e.catalog.Dataset(name)
	if !ok || ds.Generation() != gen {
		return nil, errs.Unavailablef("dataset %q was replaced or dropped while the ingest ran; ingest again", name)
	}
	plan, err := ds.Scan(ctx, catalog.ScanRequest{})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			releaseAll(out)
			out = nil
		}
	}()
	for _, task := range plan.Tasks {
		rdr, err := task.Open(ctx, e.cfg.Alloc)
		if err != nil {
			return out, fmt.Errorf("reading dataset %q back to append to it: %w", name, err)
		}
		for rdr.Next() {
			b := rdr.RecordBatch()
			b.Retain()
			out = append(out, b)
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return out, fmt.Errorf("reading dataset %q back to append to it: %w", name, err)
		}
	}
	return out, nil
}

// partitionBatches divides batches into a dataset's partitions of whole batches, nearly equal
// in bytes, as many as a dataset loaded without a partition count gets (cluster.Datasets
// .PartSpecs: per alive data node, never more than the batches, at least one); each partition
// keeps its batches in their order.
func (e *Engine) partitionBatches(batches []arrow.RecordBatch) [][]arrow.RecordBatch {
	sizes := make([]int64, len(batches))
	for i, b := range batches {
		sizes[i] = util.TotalRecordSize(b)
	}
	specs := e.datasets.PartSpecs(sizes, 0)
	parts := make([][]arrow.RecordBatch, len(specs))
	for i, s := range specs {
		for _, t := range s.Tasks {
			parts[i] = append(parts[i], batches[t])
		}
	}
	return parts
}
