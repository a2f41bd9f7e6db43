package cluster

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

// SystemCatalogName is the name of the read-only catalog of cluster state.
const SystemCatalogName = "system"

// nodesTable is system.nodes: one row per data node the head knows, alive or lost.
const nodesTable = "nodes"

// timestampType is DATETIME(6): microseconds, no time zone; values are UTC.
var timestampType = &arrow.TimestampType{Unit: arrow.Microsecond}

var nodesSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "address", Type: arrow.BinaryTypes.String},
	{Name: "state", Type: arrow.BinaryTypes.String},
	{Name: "registered_at", Type: timestampType},
	{Name: "last_heartbeat", Type: timestampType},
}, nil)

// SystemCatalog is the read-only catalog "system" that shows cluster state as tables: nodes
// lists m's nodes and datasets the materialized datasets, each as of the moment a query's scan
// is opened.
type SystemCatalog struct {
	m *Membership
	d *Datasets
}

// NewSystemCatalog returns the system catalog over m and d (d may be nil: no datasets table).
func NewSystemCatalog(m *Membership, d *Datasets) *SystemCatalog {
	return &SystemCatalog{m: m, d: d}
}

// Name is "system".
func (c *SystemCatalog) Name() string { return SystemCatalogName }

// Table returns system.nodes, or an errs.NotFound error.
func (c *SystemCatalog) Table(_ context.Context, name string) (catalog.Table, error) {
	switch {
	case strings.EqualFold(name, nodesTable):
		return &nodesTableImpl{m: c.m}, nil
	case strings.EqualFold(name, datasetsTable) && c.d != nil:
		return &datasetsTableImpl{d: c.d}, nil
	}
	names, _ := c.TableNames(context.Background())
	return nil, errs.NotFoundf("Table '%s.%s' doesn't exist: catalog %s has the tables %s", SystemCatalogName, name, SystemCatalogName, strings.Join(names, ", "))
}

// ShowDatasets adds system.datasets over d. Call it before the catalog is queried.
func (c *SystemCatalog) ShowDatasets(d *Datasets) { c.d = d }

// TableNames lists the system tables.
func (c *SystemCatalog) TableNames(context.Context) ([]string, error) {
	if c.d == nil {
		return []string{nodesTable}, nil
	}
	return []string{datasetsTable, nodesTable}, nil
}

type nodesTableImpl struct {
	m *Membership
}

func (t *nodesTableImpl) Name() string          { return nodesTable }
func (t *nodesTableImpl) Schema() *arrow.Schema { return nodesSchema }

// Scan plans one task. Its rows are read from the membership when the task is opened, so a
// query sees the nodes as they are when it runs.
func (t *nodesTableImpl) Scan(_ context.Context, req catalog.ScanRequest) (*catalog.ScanPlan, error) {
	cols := req.Columns
	if cols == nil {
		cols = make([]int, nodesSchema.NumFields())
		for i := range cols {
			cols[i] = i
		}
	}
	for _, c := range cols {
		if c < 0 || c >= nodesSchema.NumFields() {
			return nil, errs.Internalf("scan of %s.%s: column index %d out of range", SystemCatalogName, nodesTable, c)
		}
	}
	return &catalog.ScanPlan{Tasks: []catalog.ScanTask{&nodesTask{m: t.m, cols: cols}}}, nil
}

type nodesTask struct {
	m    *Membership
	cols []int
}

func (k *nodesTask) EstimatedRows() int64 { return int64(len(k.m.Nodes())) }

// Open builds one batch of the current nodes with the requested columns.
func (k *nodesTask) Open(_ context.Context, mem memory.Allocator) (array.RecordReader, error) {
	nodes := k.m.Nodes()
	fields := make([]arrow.Field, len(k.cols))
	arrays := make([]arrow.Array, len(k.cols))
	defer func() {
		for _, a := range arrays {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, c := range k.cols {
		fields[i] = nodesSchema.Field(c)
		switch c {
		case 0, 1, 2:
			b := array.NewStringBuilder(mem)
			for _, n := range nodes {
				b.Append([]string{n.ID, n.Addr, string(n.State)}[c])
			}
			arrays[i] = b.NewArray()
			b.Release()
		case 3, 4:
			b := array.NewTimestampBuilder(mem, timestampType)
			for _, n := range nodes {
				ts := n.RegisteredAt
				if c == 4 {
					ts = n.LastHeartbeat
				}
				b.Append(arrow.Timestamp(ts.UTC().UnixMicro()))
			}
			arrays[i] = b.NewArray()
			b.Release()
		}
	}
	schema := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(schema, arrays, int64(len(nodes)))
	defer rec.Release()
	return array.NewRecordReader(schema, []arrow.RecordBatch{rec})
}
