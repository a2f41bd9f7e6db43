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

// nodesTable is system.nodes: one row per data node the head knows, alive, suspect or lost.
const nodesTable = "nodes"

// timestampType is DATETIME(6): microseconds, no time zone; values are UTC.
var timestampType = &arrow.TimestampType{Unit: arrow.Microsecond}

var nodesSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.BinaryTypes.String},
	{Name: "address", Type: arrow.BinaryTypes.String},
	{Name: "state", Type: arrow.BinaryTypes.String},
	{Name: "registered_at", Type: timestampType},
	{Name: "last_heartbeat", Type: timestampType},
	{Name: "boot_id", Type: arrow.BinaryTypes.String},
}, nil)

// SystemCatalog is the read-only catalog "system" that shows cluster state as tables: nodes
// lists m's nodes and datasets the materialized datasets, each as of the moment a query's scan
// is opened.
type SystemCatalog struct {
	m *Membership
	d *Datasets
	// local reports the head process's own memory (nil: system.memory shows nodes only).
	local func() NodeMemory
}

// SetLocalMemory makes system.memory's first row the head process's own, as f reports it.
// Call it before the catalog is queried.
func (c *SystemCatalog) SetLocalMemory(f func() NodeMemory) { c.local = f }

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
	case strings.EqualFold(name, memoryTable) && (c.d != nil || c.local != nil):
		return &reportTable{name: memoryTable, schema: memorySchema, c: c, build: buildMemory}, nil
	case strings.EqualFold(name, partitionsTable) && c.d != nil:
		return &reportTable{name: partitionsTable, schema: partitionsSchema, c: c, build: buildPartitions}, nil
	}
	names, _ := c.TableNames(context.Background())
	return nil, errs.NotFoundf("Table '%s.%s' doesn't exist: catalog %s has the tables %s", SystemCatalogName, name, SystemCatalogName, strings.Join(names, ", "))
}

// TableNames lists the system tables.
func (c *SystemCatalog) TableNames(context.Context) ([]string, error) {
	switch {
	case c.d != nil:
		return []string{datasetsTable, memoryTable, nodesTable, partitionsTable}, nil
	case c.local != nil:
		return []string{memoryTable, nodesTable}, nil
	}
	return []string{nodesTable}, nil
}

type nodesTableImpl struct {
	m *Membership
}

func (t *nodesTableImpl) Name() string          { return nodesTable }
func (t *nodesTableImpl) Schema() *arrow.Schema { return nodesSchema }

// Scan plans one task. Its rows are read from the membership when the task is opened, so a
// query sees the nodes as they are when it runs.
func (t *nodesTableImpl) Scan(_ context.Context, req catalog.ScanRequest) (*catalog.ScanPlan, error) {
	cols, err := systemColumns(req.Columns, nodesSchema)
	if err != nil {
		return nil, err
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
	b := array.NewRecordBuilder(mem, nodesSchema)
	defer b.Release()
	for _, n := range k.m.Nodes() {
		b.Field(0).(*array.StringBuilder).Append(n.ID)
		b.Field(1).(*array.StringBuilder).Append(n.Addr)
		b.Field(2).(*array.StringBuilder).Append(string(n.State))
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(n.RegisteredAt.UTC().UnixMicro()))
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(n.LastHeartbeat.UTC().UnixMicro()))
		b.Field(5).(*array.StringBuilder).Append(n.BootID)
	}
	full := b.NewRecordBatch()
	defer full.Release()
	return projectRecord(full, k.cols)
}
