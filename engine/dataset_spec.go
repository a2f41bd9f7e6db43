package engine

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/internal/errs"
)

// DatasetSpec is a dataset declared in a job spec (YAML or JSON; docs/datasets.md): either a
// table with feature columns, a filter and a snapshot, or a SQL query.
type DatasetSpec struct {
	// Name is the dataset's name, as queries will name it.
	Name string `json:"name" yaml:"name"`
	// Table names the source table as SQL does (ns.t, catalog.t, `catalog.ns`.t).
	Table string `json:"table,omitempty" yaml:"table,omitempty"`
	// MetadataLocation names the source table by its Iceberg metadata file instead (s3://… or
	// a local path ending in .metadata.json): that version of the table, read with the storage
	// settings of Catalog.
	MetadataLocation string `json:"metadata_location,omitempty" yaml:"metadata_location,omitempty"`
	// Catalog is the Iceberg catalog that reads MetadataLocation (default: the server's default
	// catalog).
	Catalog string `json:"catalog,omitempty" yaml:"catalog,omitempty"`
	// Columns are the feature columns (empty: all).
	Columns []string `json:"columns,omitempty" yaml:"columns,omitempty"`
	// Filter is a SQL condition on the table's columns, pushed down to the scan.
	Filter string `json:"filter,omitempty" yaml:"filter,omitempty"`
	// Snapshot pins the table: a snapshot id, a timestamp, or a branch or tag name (empty: the
	// current snapshot when the dataset is made).
	Snapshot string `json:"snapshot,omitempty" yaml:"snapshot,omitempty"`
	// SQL is a whole query instead of Table, Columns, Filter and Snapshot.
	SQL string `json:"sql,omitempty" yaml:"sql,omitempty"`
	// Partitions is the number of partitions (0: schedule.DefaultPartitionsPerNode per data node).
	Partitions int `json:"partitions,omitempty" yaml:"partitions,omitempty"`
	// Replace swaps out a dataset of the same name made from a different definition.
	Replace bool `json:"replace,omitempty" yaml:"replace,omitempty"`
	// Pin is "memory" to keep the dataset's partitions in data-node memory (never on a node's
	// disk tier; docs/memory.md), "" to let nodes move them to disk when memory is short.
	Pin string `json:"pin,omitempty" yaml:"pin,omitempty"`
}

var datasetName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// Query returns the SQL the spec stands for, after checking it.
func (s DatasetSpec) Query() (string, error) {
	if !datasetName.MatchString(s.Name) {
		return "", errs.Invalidf("dataset name %q: use letters, digits and _, starting with a letter or _", s.Name)
	}
	if s.Pin != "" && s.Pin != cluster.PinMemory {
		return "", errs.Invalidf("dataset %q: pin must be %q or left out, not %q", s.Name, cluster.PinMemory, s.Pin)
	}
	if s.Partitions < 0 {
		return "", errs.Invalidf("dataset %q: partitions must be 0 (default) or more, not %d", s.Name, s.Partitions)
	}
	if s.SQL != "" {
		if s.Table != "" || s.MetadataLocation != "" || len(s.Columns) > 0 || s.Filter != "" || s.Snapshot != "" {
			return "", errs.Invalidf("dataset %q: give either sql or a table (with columns, filter, snapshot), not both", s.Name)
		}
		return s.SQL, nil
	}
	from := ""
	switch {
	case s.Table != "" && s.MetadataLocation != "":
		return "", errs.Invalidf("dataset %q: give either table or metadata_location, not both", s.Name)
	case s.Table != "":
		if s.Catalog != "" {
			return "", errs.Invalidf("dataset %q: catalog goes with metadata_location; qualify table instead (catalog.ns.table)", s.Name)
		}
		from = tableRef(s.Table, s.Snapshot)
	case s.MetadataLocation != "":
		// Without a catalog the name resolves in the server's default catalog (Load checks
		// there is one).
		name := catalog.LocationTableName(s.MetadataLocation)
		if s.Snapshot != "" {
			name += "@" + s.Snapshot
		}
		from = quoteIdent(name)
		if s.Catalog != "" {
			from = quoteIdent(s.Catalog) + "." + from
		}
	default:
		return "", errs.Invalidf("dataset %q: give a table, a metadata_location or a sql query", s.Name)
	}
	cols := "*"
	if len(s.Columns) > 0 {
		quoted := make([]string, len(s.Columns))
		for i, c := range s.Columns {
			quoted[i] = quoteIdent(c)
		}
		cols = strings.Join(quoted, ", ")
	}
	q := fmt.Sprintf("SELECT %s FROM %s", cols, from)
	if strings.TrimSpace(s.Filter) != "" {
		q += " WHERE " + s.Filter
	}
	return q, nil
}

// tableRef writes a table name as SQL reads it: the last part is the table (with @snapshot),
// everything before it one qualifier.
func tableRef(table, snapshot string) string {
	table = strings.ReplaceAll(table, "`", "")
	name, qualifier := table, ""
	if i := strings.LastIndexByte(table, '.'); i >= 0 {
		qualifier, name = table[:i], table[i+1:]
	}
	if snapshot != "" {
		name += "@" + snapshot
	}
	if qualifier == "" {
		return quoteIdent(name)
	}
	return quoteIdent(qualifier) + "." + quoteIdent(name)
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// Load materializes the dataset a job spec declares (CreateDataset), or reuses it when the same
// plan over the same snapshot is already held under its name.
func (e *Engine) Load(ctx context.Context, spec DatasetSpec, progress func(cluster.Progress)) (cluster.DatasetInfo, error) {
	if spec.MetadataLocation != "" && spec.Catalog == "" {
		if e.cfg.DefaultCatalog == "" {
			return cluster.DatasetInfo{}, errs.Invalidf("dataset %q: metadata_location needs the catalog whose storage settings read it: add catalog to the spec (this server has no default catalog)", spec.Name)
		}
		spec.Catalog = e.cfg.DefaultCatalog
	}
	query, err := spec.Query()
	if err != nil {
		return cluster.DatasetInfo{}, err
	}
	source := spec.SQL
	switch {
	case source != "":
	case spec.MetadataLocation != "":
		source = spec.MetadataLocation
	default:
		source = strings.ReplaceAll(spec.Table, "`", "")
	}
	if spec.SQL == "" && spec.Snapshot != "" {
		source += "@" + spec.Snapshot
	}
	return e.CreateDataset(ctx, spec.Name, query, DatasetOptions{Partitions: spec.Partitions, Replace: spec.Replace, Source: source, Pin: spec.Pin}, progress)
}
