package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
)

// memoryTable is system.memory: one row per process (the head, then each data node not lost)
// with its memory budget and disk tier.
const memoryTable = "memory"

// partitionsTable is system.partitions: one row per dataset partition a data node holds.
const partitionsTable = "partitions"

// headNode names the head's own row of system.memory.
const headNode = "head"

var memorySchema = arrow.NewSchema([]arrow.Field{
	{Name: "node", Type: arrow.BinaryTypes.String},
	{Name: "address", Type: arrow.BinaryTypes.String},
	{Name: "memory_limit", Type: arrow.PrimitiveTypes.Int64},
	{Name: "reserved", Type: arrow.PrimitiveTypes.Int64},
	{Name: "peak", Type: arrow.PrimitiveTypes.Int64},
	{Name: "refusals", Type: arrow.PrimitiveTypes.Int64},
	{Name: "partition_bytes", Type: arrow.PrimitiveTypes.Int64},
	{Name: "consumers", Type: arrow.BinaryTypes.String},
	{Name: "disk_used", Type: arrow.PrimitiveTypes.Int64},
	{Name: "disk_limit", Type: arrow.PrimitiveTypes.Int64},
	{Name: "error", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

var partitionsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "dataset", Type: arrow.BinaryTypes.String},
	{Name: "generation", Type: arrow.PrimitiveTypes.Int64},
	{Name: "partition", Type: arrow.PrimitiveTypes.Int64},
	{Name: "node", Type: arrow.BinaryTypes.String},
	{Name: "tier", Type: arrow.BinaryTypes.String},
	{Name: "row_count", Type: arrow.PrimitiveTypes.Int64},
	{Name: "bytes", Type: arrow.PrimitiveTypes.Int64},
	{Name: "disk_bytes", Type: arrow.PrimitiveTypes.Int64},
	{Name: "reads", Type: arrow.PrimitiveTypes.Int64},
	{Name: "last_read", Type: timestampType, Nullable: true},
	{Name: "rebuild_requests", Type: arrow.PrimitiveTypes.Int64},
	{Name: "pinned", Type: arrow.FixedWidthTypes.Boolean},
}, nil)

// reportTable is a system table built from the nodes' NodeMemory reports when its scan is
// opened.
type reportTable struct {
	name   string
	schema *arrow.Schema
	c      *SystemCatalog
	build  func(ctx context.Context, c *SystemCatalog, b *array.RecordBuilder)
}

func (t *reportTable) Name() string          { return t.name }
func (t *reportTable) Schema() *arrow.Schema { return t.schema }

func (t *reportTable) Scan(_ context.Context, req catalog.ScanRequest) (*catalog.ScanPlan, error) {
	cols, err := systemColumns(req.Columns, t.schema)
	if err != nil {
		return nil, err
	}
	return &catalog.ScanPlan{Tasks: []catalog.ScanTask{&reportTask{t: t, cols: cols}}}, nil
}

type reportTask struct {
	t    *reportTable
	cols []int
}

func (k *reportTask) EstimatedRows() int64 { return int64(len(k.t.c.m.Nodes()) + 1) }

func (k *reportTask) Open(ctx context.Context, mem memory.Allocator) (array.RecordReader, error) {
	b := array.NewRecordBuilder(mem, k.t.schema)
	defer b.Release()
	k.t.build(ctx, k.t.c, b)
	full := b.NewRecordBatch()
	defer full.Release()
	return projectRecord(full, k.cols)
}

// buildMemory appends the head's row, then each node's.
func buildMemory(ctx context.Context, c *SystemCatalog, b *array.RecordBuilder) {
	if c.local != nil {
		appendMemoryRow(b, headNode, "", c.local(), nil)
	}
	if c.d == nil {
		return
	}
	for _, r := range c.d.NodeMemory(ctx) {
		appendMemoryRow(b, r.Node.ID, r.Node.Addr, r.Memory, r.Err)
	}
}

func appendMemoryRow(b *array.RecordBuilder, node, addr string, m NodeMemory, err error) {
	var partitions int64
	consumers := make([]string, 0, len(m.Memory.Consumers))
	for _, c := range m.Memory.Consumers {
		consumers = append(consumers, fmt.Sprintf("%s=%d", c.Name, c.Bytes))
		if c.Name == PartitionsConsumer {
			partitions = c.Bytes
		}
	}
	b.Field(0).(*array.StringBuilder).Append(node)
	b.Field(1).(*array.StringBuilder).Append(addr)
	b.Field(2).(*array.Int64Builder).Append(m.Memory.Limit)
	b.Field(3).(*array.Int64Builder).Append(m.Memory.Reserved)
	b.Field(4).(*array.Int64Builder).Append(m.Memory.Peak)
	b.Field(5).(*array.Int64Builder).Append(m.Memory.Refusals)
	b.Field(6).(*array.Int64Builder).Append(partitions)
	b.Field(7).(*array.StringBuilder).Append(strings.Join(consumers, ","))
	b.Field(8).(*array.Int64Builder).Append(m.DiskUsed)
	b.Field(9).(*array.Int64Builder).Append(m.DiskLimit)
	if err != nil {
		b.Field(10).(*array.StringBuilder).Append(err.Error())
	} else {
		b.Field(10).AppendNull()
	}
}

// PartitionsConsumer is the pool consumer dataset partitions reserve as.
const PartitionsConsumer = "dataset partitions"

// buildPartitions appends each node's partitions.
func buildPartitions(ctx context.Context, c *SystemCatalog, b *array.RecordBuilder) {
	if c.d == nil {
		return
	}
	for _, r := range c.d.NodeMemory(ctx) {
		for _, p := range r.Memory.Partitions {
			b.Field(0).(*array.StringBuilder).Append(p.Dataset)
			b.Field(1).(*array.Int64Builder).Append(int64(p.Generation))
			b.Field(2).(*array.Int64Builder).Append(int64(p.Partition))
			b.Field(3).(*array.StringBuilder).Append(r.Node.ID)
			b.Field(4).(*array.StringBuilder).Append(p.Tier)
			b.Field(5).(*array.Int64Builder).Append(p.Rows)
			b.Field(6).(*array.Int64Builder).Append(p.Bytes)
			b.Field(7).(*array.Int64Builder).Append(p.DiskBytes)
			b.Field(8).(*array.Int64Builder).Append(p.Reads)
			if p.LastRead.IsZero() {
				b.Field(9).AppendNull()
			} else {
				b.Field(9).(*array.TimestampBuilder).Append(arrow.Timestamp(p.LastRead.UTC().UnixMicro()))
			}
			b.Field(10).(*array.Int64Builder).Append(p.RebuildRequests)
			b.Field(11).(*array.BooleanBuilder).Append(p.Pinned)
		}
	}
}

// tierBytes sums, per dataset generation, the bytes the nodes hold of it in memory and on disk.
func tierBytes(reports []NodeMemoryReport) map[datasetGen][2]int64 {
	out := map[datasetGen][2]int64{}
	for _, r := range reports {
		for _, p := range r.Memory.Partitions {
			k := datasetGen{strings.ToLower(p.Dataset), p.Generation}
			v := out[k]
			switch p.Tier {
			case "memory":
				v[0] += p.Bytes
			case "disk":
				v[1] += p.DiskBytes
			}
			out[k] = v
		}
	}
	return out
}

type datasetGen struct {
	name string
	gen  uint64
}
