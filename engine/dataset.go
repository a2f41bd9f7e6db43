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
	// Pin is cluster.PinMemory to keep the partitions in data-node memory (DatasetJob.Pin).
	Pin string
}

// CreateDataset materializes the result of a query as a dataset named name in data-node memory
// (see cluster.Datasets), or reuses the dataset of that name when it already holds the same plan
// over the same table versions. The query must read only source (Iceberg) tables. It fails with
// errs.Unsupported on an engine that runs no cluster (no Config.Datasets).
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
		Pins: pins, Fingerprint: fp, ResultSchema: HeldSchema(op.Schema(), stored), Stored: stored,
		Source: opts.Source, Pin: opts.Pin,
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

// MemoryCatalog is the engine's own catalog: where a head's dataset registry attaches datasets,
// and where a data node's runtime holds the partitions it makes.
func (e *Engine) MemoryCatalog() *memcat.Catalog { return e.catalog }

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

// HeldSchema is schema with the columns named in stored (DatasetJob.Stored) of their stored
// types: the schema a data node holds a dataset partition in.
func HeldSchema(schema *arrow.Schema, stored []string) *arrow.Schema {
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

func releaseColumns(cols []arrow.Array) {
	for _, c := range cols {
		if c != nil {
			c.Release()
		}
	}
}

// DatasetRows returns, for the pins of a statement that name datasets of the engine's catalog
// (version "primary@<generation>"), their row counts by pin name: what the planner estimates
// them with here (memcat.Dataset.Statistics). A data node planning the statement's stage is
// given them (cluster.Stage.DatasetRows, PinDatasetRows).
func (e *Engine) DatasetRows(pins map[string]string) map[string]int64 {
	var out map[string]int64
	for name, version := range pins {
		ds := e.pinnedDataset(name, version)
		if ds == nil {
			continue
		}
		st, err := ds.Statistics(context.Background())
		if err != nil || st.Rows < 0 {
			continue
		}
		if out == nil {
			out = map[string]int64{}
		}
		out[name] = st.Rows
	}
	return out
}

// PinDatasetRows makes the datasets named in rows (as DatasetRows gives them, at the
// generations pins name) plan with those row counts.
func (e *Engine) PinDatasetRows(pins map[string]string, rows map[string]int64) {
	for name, n := range rows {
		if ds := e.pinnedDataset(name, pins[name]); ds != nil {
			ds.SetPlannedRows(n)
		}
	}
}

// pinnedDataset is the dataset of the engine's catalog that pin name at version names (nil for
// any other table).
func (e *Engine) pinnedDataset(name, version string) *memcat.Dataset {
	if !catalog.PinnedInPrimary(version) {
		return nil
	}
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	ds, ok := e.catalog.Dataset(name)
	for ; ok && ds != nil; ds = ds.Displaced() {
		if strings.HasSuffix(version, ds.Version()) {
			return ds
		}
	}
	return nil
}
