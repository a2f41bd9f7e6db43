package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/catalog"
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// DatasetOptions shape a materialized dataset.
type DatasetOptions struct {
	// Partitions is the number of partitions (0: schedule.DefaultPartitionsPerNode per alive
	// data node).
	// A query that cannot be divided has one partition; a table with fewer scan tasks has one
	// per task.
	Partitions int
	// Replace swaps out a dataset of the same name with a different definition.
	Replace bool
	// Source describes where the rows come from, for system.datasets.
	Source string
}

// CreateDataset materializes the result of a query as a dataset named name in data-node memory
// (see cluster.Datasets), or reuses the dataset of that name when it already holds the same plan
// over the same table versions. The query must read only source (Iceberg) tables. It fails with
// errs.Unsupported on an engine that runs no cluster (no UseDatasets).
func (e *Engine) CreateDataset(ctx context.Context, name, query string, opts DatasetOptions, progress func(cluster.Progress)) (cluster.DatasetInfo, error) {
	if e.datasets == nil {
		return cluster.DatasetInfo{}, errs.Unsupportedf("datasets are held by data nodes: start the server with data nodes (cachedb serve --workers N, or cachedb head with workers)")
	}
	tables, err := e.tablesFor(ctx)
	if err != nil {
		return cluster.DatasetInfo{}, err
	}
	stmt, err := e.bind(ctx, query, tables, nil)
	if err != nil {
		return cluster.DatasetInfo{}, err
	}
	q, ok := stmt.(*planner.Query)
	if !ok {
		return cluster.DatasetInfo{}, errs.Invalidf("a dataset is made from a query (SELECT), not %s", strings.Fields(query + " statement")[0])
	}
	if opts.Source == "" {
		opts.Source = query
	}
	return e.materialize(ctx, name, q, query, tables, opts, progress)
}

// materialize builds the job of a bound query and has the registry make it.
func (e *Engine) materialize(ctx context.Context, name string, q *planner.Query, query string, tables *catalog.Set, opts DatasetOptions, progress func(cluster.Progress)) (cluster.DatasetInfo, error) {
	if q.NumParams > 0 {
		return cluster.DatasetInfo{}, errs.Invalidf("a dataset's query cannot have ? placeholders")
	}
	if tables.UsedViews() {
		// Data nodes plan the SQL text, and the head's views are not theirs.
		return cluster.DatasetInfo{}, fmt.Errorf("%w: %w", errs.Unsupportedf("a dataset's query cannot name a view: write the view's query in its place"), errNotFromSources)
	}
	// The fingerprint needs only the bound plan and the pinned versions: a dataset that would be
	// reused is found before physical planning reads manifests.
	pins := tables.Pins()
	fp := fingerprint(planner.Format(planner.Optimize(q.Plan)), pins)
	if info, ok := e.datasets.Reuse(name, fp, progress); ok {
		return info, nil
	}
	// One physical plan: the divided one when the query divides, else the whole one.
	op, scan, divisible, err := planner.PlanQueryShares(ctx, q, e.physicalOptions(false))
	if err == nil && !divisible {
		op, _, err = planner.PlanQuery(ctx, q, e.physicalOptions(false))
	}
	if err != nil {
		return cluster.DatasetInfo{}, err
	}
	if err := datasetSources(op); err != nil {
		return cluster.DatasetInfo{}, err
	}
	session := SessionFrom(ctx)
	stored := storedTypeNames(q.Plan, op.Schema())
	job := cluster.DatasetJob{
		Name: name, Replace: opts.Replace, SQL: query, Catalog: session.Catalog, Schema: session.Schema,
		Pins: pins, Fingerprint: fp, ResultSchema: heldSchema(op.Schema(), stored), Stored: stored,
		Source: opts.Source,
	}
	if divisible {
		job.Parts = e.datasets.PartSpecs(scan.TaskBytes(), opts.Partitions)
	} else {
		job.Parts = []cluster.PartSpec{{Whole: true}}
	}
	return e.datasets.Create(ctx, job, progress)
}

// errNotFromSources marks a query that reads a table data nodes cannot read.
var errNotFromSources = errors.New("a dataset is made from Iceberg tables only")

// datasetSources checks that every table a plan reads can be read by a data node at a pinned
// version: a source (Iceberg) table, not a memory table, a system table or another dataset.
// Otherwise the error is an errs.Unsupported that wraps errNotFromSources.
func datasetSources(op exec.Operator) error {
	if s, ok := op.(*exec.Scan); ok {
		t := s.Table()
		_, versioned := t.(catalog.VersionedTable)
		_, dataset := t.(*memcat.Dataset)
		if !versioned || dataset {
			return fmt.Errorf("%w: %w", errs.Unsupportedf("%q is not an Iceberg table", t.Name()), errNotFromSources)
		}
	}
	for _, c := range op.Children() {
		if err := datasetSources(c); err != nil {
			return err
		}
	}
	return nil
}

// fingerprint identifies a plan over pinned table versions.
func fingerprint(plan string, pins map[string]string) string {
	h := sha256.New()
	h.Write([]byte(plan))
	for _, name := range slices.Sorted(maps.Keys(pins)) {
		fmt.Fprintf(h, "\x00%s%s", strings.ToLower(name), pins[name])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Datasets returns the registry of materialized datasets (nil on an engine without a cluster).
func (e *Engine) Datasets() *cluster.Datasets { return e.datasets }

// MemoryCatalog is the engine's own catalog, where a head's dataset registry attaches datasets.
func (e *Engine) MemoryCatalog() *memcat.Catalog { return e.catalog }

// UseDatasets makes the engine a cluster head's: CREATE TABLE … AS SELECT over Iceberg tables
// materializes a dataset on the data nodes through d, DROP TABLE of a dataset frees it, and
// CreateDataset works. d must attach datasets to MemoryCatalog. Call it before the engine serves.
func (e *Engine) UseDatasets(d *cluster.Datasets) { e.datasets = d }

// The methods below make an engine a data node's cluster.DatasetStore.
var _ cluster.DatasetStore = (*Engine)(nil)

// Materialize implements cluster.DatasetStore: it runs the partition's part of the query and
// holds its batches in the engine's catalog, under the dataset's name at its generation.
func (e *Engine) Materialize(ctx context.Context, req cluster.MaterializeRequest) (cluster.PartitionStats, error) {
	if req.Partitions < 1 || req.Partition < 0 || req.Partition >= req.Partitions {
		return cluster.PartitionStats{}, errs.Invalidf("partition %d of %d does not exist", req.Partition, req.Partitions)
	}
	ctx = WithSession(ctx, Session{Catalog: req.Catalog, Schema: req.Schema, Pins: req.Pins})
	var (
		schema  *arrow.Schema
		batches []arrow.RecordBatch
	)
	if req.Whole {
		res, err := e.Execute(ctx, req.SQL, nil)
		if err != nil {
			return cluster.PartitionStats{}, err
		}
		if res.Reader == nil {
			return cluster.PartitionStats{}, errs.Invalidf("a dataset is made from a query; this statement returns no rows")
		}
		if batches, err = drain(res.Reader); err != nil {
			return cluster.PartitionStats{}, err
		}
		schema = res.Schema
	} else {
		// In task order: a partition made again after a node loss holds its rows in the same
		// order, which training reads rely on.
		var err error
		if schema, batches, err = e.collectTasksInOrder(ctx, req.SQL, req.Tasks); err != nil {
			return cluster.PartitionStats{}, err
		}
	}
	if len(req.Stored) > 0 {
		if len(req.Stored) != schema.NumFields() {
			releaseAll(batches)
			return cluster.PartitionStats{}, errs.Invalidf("the dataset's query has %d columns, its stored types %d", schema.NumFields(), len(req.Stored))
		}
		schema = heldSchema(schema, req.Stored)
		held, err := castToStored(ctx, e.taskContext(nil), batches, schema, req.Stored)
		releaseAll(batches)
		if err != nil {
			return cluster.PartitionStats{}, err
		}
		batches = held
	}
	part := memcat.LocalPart(batches)
	ds, err := e.heldDataset(req, schema)
	if err != nil {
		return cluster.PartitionStats{}, err
	}
	if err := ds.SetPart(req.Partition, part); err != nil {
		return cluster.PartitionStats{}, err
	}
	return cluster.PartitionStats{Rows: part.Rows, Bytes: part.Bytes}, nil
}

// heldDataset returns this node's dataset object for req's generation, attaching a new one on
// the first partition. A new generation displaces an older one (memcat.Dataset.Displaced): the
// older one stays readable by the head and becomes current again if the head drops the new one
// (making it failed), until the head drops the older one.
func (e *Engine) heldDataset(req cluster.MaterializeRequest, schema *arrow.Schema) (*memcat.Dataset, error) {
	e.datasetMu.Lock()
	defer e.datasetMu.Unlock()
	current, ok := e.catalog.Dataset(req.Dataset)
	if ok {
		if ds := generationOf(current, req.Generation); ds != nil {
			return ds, nil
		}
		if current.Generation() > req.Generation {
			return nil, errs.Invalidf("dataset %q generation %d was replaced by generation %d", req.Dataset, req.Generation, current.Generation())
		}
	}
	ds := memcat.NewDataset(req.Dataset, req.Generation, schema, req.Partitions)
	if ok {
		ds.SetDisplaced(current)
	}
	if _, err := e.catalog.AttachDataset(ds, true); err != nil {
		return nil, err
	}
	return ds, nil
}

// generationOf finds generation gen among ds and the generations it displaced.
func generationOf(ds *memcat.Dataset, gen uint64) *memcat.Dataset {
	for ; ds != nil; ds = ds.Displaced() {
		if ds.Generation() == gen {
			return ds
		}
	}
	return nil
}

// DropDataset implements cluster.DatasetStore. Dropping the current generation makes the one it
// displaced current again (the head dropped a generation it failed to make); dropping a
// displaced one frees it.
func (e *Engine) DropDataset(name string, generation uint64) {
	e.datasetMu.Lock()
	defer e.datasetMu.Unlock()
	current, ok := e.catalog.Dataset(name)
	if !ok {
		return
	}
	if current.Generation() == generation {
		if prev := current.Displaced(); prev != nil {
			_, _ = e.catalog.AttachDataset(prev, true)
			return
		}
		e.catalog.DetachDataset(name, generation)
		return
	}
	for ds := current; ds.Displaced() != nil; ds = ds.Displaced() {
		if ds.Displaced().Generation() == generation {
			ds.SetDisplaced(ds.Displaced().Displaced())
			return
		}
	}
}

// ReadPartition implements cluster.DatasetStore.
func (e *Engine) ReadPartition(ctx context.Context, name string, generation uint64, partition int, columns []int) (array.RecordReader, error) {
	current, ok := e.catalog.Dataset(name)
	ds := generationOf(current, generation)
	if !ok || ds == nil {
		return nil, errs.Unavailablef("dataset %q generation %d is not held by this node", name, generation)
	}
	if partition < 0 || partition >= ds.NumPartitions() || !ds.Parts()[partition].Held() {
		return nil, errs.Unavailablef("partition %d of dataset %q is not held by this node", partition, name)
	}
	plan, err := ds.Scan(ctx, catalog.ScanRequest{Columns: columns})
	if err != nil {
		return nil, err
	}
	return plan.Tasks[partition].Open(ctx, e.cfg.Alloc)
}

// drain reads rdr to its end and releases it, returning its batches (retained).
func drain(rdr array.RecordReader) ([]arrow.RecordBatch, error) {
	defer rdr.Release()
	var out []arrow.RecordBatch
	for rdr.Next() {
		b := rdr.RecordBatch()
		b.Retain()
		out = append(out, b)
	}
	if err := rdr.Err(); err != nil {
		releaseAll(out)
		return nil, err
	}
	return out, nil
}

// storedTypes maps the names DatasetJob.Stored uses to types: the narrow types scans widen.
var storedTypes = map[string]arrow.DataType{}

func init() {
	for _, t := range planner.NarrowTypes {
		storedTypes[t.Name()] = t
	}
}

// storedTypeNames returns DatasetJob.Stored for a query's bound plan and its physical result
// schema: per column, the table's stored type where the scan widened a column passed through
// unchanged (planner.StoredTypes), else "". It returns nil when no column narrows.
func storedTypeNames(plan planner.Plan, result *arrow.Schema) []string {
	types := planner.StoredTypes(plan)
	if len(types) != result.NumFields() {
		return nil
	}
	var names []string
	for i, t := range types {
		if t == nil || !arrow.TypeEqual(result.Field(i).Type, exec.CanonicalType(t)) {
			continue
		}
		if names == nil {
			names = make([]string, len(types))
		}
		names[i] = t.Name()
	}
	return names
}

// heldSchema is schema with the columns named in stored of their stored types.
func heldSchema(schema *arrow.Schema, stored []string) *arrow.Schema {
	if len(stored) == 0 {
		return schema
	}
	fields := slices.Clone(schema.Fields())
	for i, name := range stored {
		if t, ok := storedTypes[name]; ok && i < len(fields) {
			fields[i].Type = t
		}
	}
	return arrow.NewSchema(fields, nil)
}

// castToStored casts the columns of batches named in stored to their stored types (exact: the
// values were widened from them). The caller keeps its batches.
func castToStored(ctx context.Context, tc *exec.TaskContext, batches []arrow.RecordBatch, schema *arrow.Schema, stored []string) ([]arrow.RecordBatch, error) {
	out := make([]arrow.RecordBatch, 0, len(batches))
	for _, b := range batches {
		cols := make([]arrow.Array, b.NumCols())
		for i, c := range b.Columns() {
			if t, ok := storedTypes[stored[i]]; ok {
				a, err := exec.CastArray(ctx, tc, c, t)
				if err != nil {
					releaseColumns(cols)
					releaseAll(out)
					return nil, errs.Internalf("holding column %q as %s: %v", schema.Field(i).Name, t, err)
				}
				cols[i] = a
				continue
			}
			c.Retain()
			cols[i] = c
		}
		out = append(out, array.NewRecordBatch(schema, cols, b.NumRows()))
		releaseColumns(cols)
	}
	return out, nil
}

func releaseColumns(cols []arrow.Array) {
	for _, c := range cols {
		if c != nil {
			c.Release()
		}
	}
}
