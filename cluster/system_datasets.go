package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

// datasetsTable is system.datasets: one row per materialized dataset.
const datasetsTable = "datasets"

var datasetsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "state", Type: arrow.BinaryTypes.String},
	{Name: "row_count", Type: arrow.PrimitiveTypes.Int64},
	{Name: "bytes", Type: arrow.PrimitiveTypes.Int64},
	{Name: "partitions", Type: arrow.PrimitiveTypes.Int64},
	{Name: "nodes", Type: arrow.BinaryTypes.String},
	{Name: "source", Type: arrow.BinaryTypes.String},
	{Name: "snapshot", Type: arrow.BinaryTypes.String},
	{Name: "created_at", Type: timestampType},
	{Name: "age_seconds", Type: arrow.PrimitiveTypes.Float64},
	{Name: "hits", Type: arrow.PrimitiveTypes.Int64},
	{Name: "generation", Type: arrow.PrimitiveTypes.Int64},
	{Name: "fingerprint", Type: arrow.BinaryTypes.String},
	// bytes_in_memory and bytes_on_disk sum what the data nodes hold of the dataset in each
	// tier (asked of the nodes only when a query reads them).
	{Name: "bytes_in_memory", Type: arrow.PrimitiveTypes.Int64},
	{Name: "bytes_on_disk", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// firstTierColumn is the index of bytes_in_memory.
const firstTierColumn = 13

type datasetsTableImpl struct {
	d *Datasets
}

func (t *datasetsTableImpl) Name() string          { return datasetsTable }
func (t *datasetsTableImpl) Schema() *arrow.Schema { return datasetsSchema }

// Scan plans one task; its rows are the registry as it is when the task is opened.
func (t *datasetsTableImpl) Scan(_ context.Context, req catalog.ScanRequest) (*catalog.ScanPlan, error) {
	cols, err := systemColumns(req.Columns, datasetsSchema)
	if err != nil {
		return nil, err
	}
	return &catalog.ScanPlan{Tasks: []catalog.ScanTask{&datasetsTask{d: t.d, cols: cols}}}, nil
}

type datasetsTask struct {
	d    *Datasets
	cols []int
}

func (k *datasetsTask) EstimatedRows() int64 { return int64(len(k.d.List())) }

func (k *datasetsTask) Open(ctx context.Context, mem memory.Allocator) (array.RecordReader, error) {
	list := k.d.List()
	var tiers map[datasetGen][2]int64
	if slices.ContainsFunc(k.cols, func(c int) bool { return c >= firstTierColumn }) {
		tiers = tierBytes(k.d.NodeMemory(ctx))
	}
	now := time.Now()
	b := array.NewRecordBuilder(mem, datasetsSchema)
	defer b.Release()
	for _, info := range list {
		b.Field(0).(*array.StringBuilder).Append(info.Name)
		b.Field(1).(*array.StringBuilder).Append(info.State)
		b.Field(2).(*array.Int64Builder).Append(info.Rows)
		b.Field(3).(*array.Int64Builder).Append(info.Bytes)
		b.Field(4).(*array.Int64Builder).Append(int64(info.Partitions))
		b.Field(5).(*array.StringBuilder).Append(strings.Join(info.Nodes, ","))
		b.Field(6).(*array.StringBuilder).Append(info.Source)
		b.Field(7).(*array.StringBuilder).Append(PinsText(info.Pins))
		b.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(info.Created.UTC().UnixMicro()))
		b.Field(9).(*array.Float64Builder).Append(now.Sub(info.Created).Seconds())
		b.Field(10).(*array.Int64Builder).Append(info.Hits)
		b.Field(11).(*array.Int64Builder).Append(int64(info.Generation))
		b.Field(12).(*array.StringBuilder).Append(info.Fingerprint)
		held := tiers[datasetGen{strings.ToLower(info.Name), info.Generation}]
		b.Field(13).(*array.Int64Builder).Append(held[0])
		b.Field(14).(*array.Int64Builder).Append(held[1])
	}
	full := b.NewRecordBatch()
	defer full.Release()
	return projectRecord(full, k.cols)
}

// PinsText shows the table versions a dataset was made at: "table@version" pairs by name.
func PinsText(pins map[string]string) string {
	parts := make([]string, 0, len(pins))
	for _, name := range slices.Sorted(maps.Keys(pins)) {
		base, _, _ := strings.Cut(name, "@")
		parts = append(parts, base+pins[name])
	}
	return strings.Join(parts, ",")
}

// systemColumns resolves a scan's column list against a system table's schema.
func systemColumns(cols []int, schema *arrow.Schema) ([]int, error) {
	if cols == nil {
		cols = make([]int, schema.NumFields())
		for i := range cols {
			cols[i] = i
		}
	}
	for _, c := range cols {
		if c < 0 || c >= schema.NumFields() {
			return nil, errs.Internalf("scan of a system table: column index %d out of range", c)
		}
	}
	return cols, nil
}

// projectRecord returns a reader of one batch made of rec's columns cols.
func projectRecord(rec arrow.RecordBatch, cols []int) (array.RecordReader, error) {
	fields := make([]arrow.Field, len(cols))
	arrays := make([]arrow.Array, len(cols))
	for i, c := range cols {
		fields[i] = rec.Schema().Field(c)
		arrays[i] = rec.Column(c)
	}
	schema := arrow.NewSchema(fields, nil)
	out := array.NewRecordBatch(schema, arrays, rec.NumRows())
	defer out.Release()
	rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{out})
	if err != nil {
		return nil, fmt.Errorf("system table: %w", err)
	}
	return rdr, nil
}
