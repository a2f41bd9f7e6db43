package node

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/exec"
)

// BenchmarkEpochRead measures how fast data nodes gather one reader's shuffled epoch from the
// partitions they hold (8 partitions held in batches of 8,192 rows, every other one by each of
// two nodes, which stream their rows of the epoch one after the other; batches of 4,096):
//   - features: the shape of bench/training, an int64 id, 16 float32 features and an int32
//     label, 200,000 rows a partition;
//   - embedding: an int64 id and a 256-float32 embedding (1 KiB a row), 20,000 rows a partition.
//
// The /disk variants serve the same partitions from the disk tier (mapped Arrow IPC files, in
// the page cache after the first epoch).
func BenchmarkEpochRead(b *testing.B) {
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}
	for f := range 16 {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("f%d", f), Type: arrow.PrimitiveTypes.Float32})
	}
	fields = append(fields, arrow.Field{Name: "label", Type: arrow.PrimitiveTypes.Int32})
	features := arrow.NewSchema(fields, nil)
	embedding := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "embedding", Type: arrow.FixedSizeListOf(256, arrow.PrimitiveTypes.Float32)},
	}, nil)
	b.Run("features", func(b *testing.B) { benchmarkEpochRead(b, features, 200_000, false) })
	b.Run("features/disk", func(b *testing.B) { benchmarkEpochRead(b, features, 200_000, true) })
	b.Run("embedding", func(b *testing.B) { benchmarkEpochRead(b, embedding, 20_000, false) })
	b.Run("embedding/disk", func(b *testing.B) { benchmarkEpochRead(b, embedding, 20_000, true) })
}

// benchmarkEpochRead reads whole epochs of 8 partitions of partRows rows of schema (an int64
// id, then int32, float32 or fixed-size lists of float32), held in memory or on disk.
func benchmarkEpochRead(b *testing.B, schema *arrow.Schema, partRows int, onDisk bool) {
	const parts, heldRows = 8, 8192
	mem := memory.NewGoAllocator()
	held := make([]memcat.Part, parts)
	partRowCounts := make([]int64, parts)
	var id int64
	for p := range held {
		for from := 0; from < partRows; from += heldRows {
			bld := array.NewRecordBuilder(mem, schema)
			for range min(heldRows, partRows-from) {
				bld.Field(0).(*array.Int64Builder).Append(id)
				for f := 1; f < schema.NumFields(); f++ {
					switch fb := bld.Field(f).(type) {
					case *array.Float32Builder:
						fb.Append(float32(id) + float32(f))
					case *array.Int32Builder:
						fb.Append(int32(id % 10))
					case *array.FixedSizeListBuilder:
						fb.Append(true)
						n := int(schema.Field(f).Type.(*arrow.FixedSizeListType).Len())
						for k := range n {
							fb.ValueBuilder().(*array.Float32Builder).Append(float32(id) + float32(k))
						}
					}
				}
				id++
			}
			held[p].Batches = append(held[p].Batches, bld.NewRecordBatch())
			bld.Release()
		}
		held[p].Rows = int64(partRows)
		partRowCounts[p] = int64(partRows)
	}
	if onDisk {
		held = partsOnDisk(b, schema, held)
	}
	cols := make([]int, schema.NumFields())
	names := make([]string, schema.NumFields())
	var rowBytes int64
	for i, f := range schema.Fields() {
		cols[i], names[i] = i, f.Name
		rowBytes += int64(exec.FixedRowWidth(f.Type))
	}
	req := engine.DefaultEpochRequest()
	req.Reader.BatchSize = 4096
	target, part := epochSizes(rowBytes, req.Reader.BatchSize)
	total := int64(parts * partRows)
	buffers, _ := epochTestBuffers()
	b.SetBytes(total * rowBytes)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		req.Epoch = int64(i)
		order, err := cluster.NewEpochOrder(partRowCounts, req.Seed, req.Epoch, req.Shuffle, cluster.MixBlocks, req.ChunkRows, req.WindowRows)
		if err != nil {
			b.Fatal(err)
		}
		rows := int64(0)
		// As two data nodes holding every other partition serve it: one stream each.
		for node := range 2 {
			s := engine.EpochSlice{Columns: cols, Names: names, PartRows: partRowCounts, Request: req, From: 0, To: total}
			for p := node; p < parts; p += 2 {
				s.Partitions = append(s.Partitions, p)
			}
			tc := &exec.TaskContext{Alloc: mem, BatchSize: 8192, Cache: exec.NewQueryCache()}
			r, err := newEpochReader(context.Background(), tc, buffers, s, order, held, schema, target, part)
			if err != nil {
				b.Fatal(err)
			}
			for r.Next() {
				rows += r.RecordBatch().NumRows()
			}
			if r.Err() != nil {
				b.Fatal(r.Err())
			}
			r.Release()
		}
		if rows != total {
			b.Fatalf("read %d rows, want %d", rows, total)
		}
	}
}
