package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/exec"
)

// BenchmarkEpochRead measures how fast a data node gathers one reader's shuffled epoch from
// the partitions it holds: the shape of bench/training (an int64 id, 16 float32 features and
// an int32 label; 8 partitions of 200,000 rows held in batches of 8,192; batches of 4,096).
func BenchmarkEpochRead(b *testing.B) {
	const parts, partRows, heldRows, features = 8, 200_000, 8192, 16
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}
	for f := range features {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("f%d", f), Type: arrow.PrimitiveTypes.Float32})
	}
	fields = append(fields, arrow.Field{Name: "label", Type: arrow.PrimitiveTypes.Int32})
	schema := arrow.NewSchema(fields, nil)
	mem := memory.NewGoAllocator()
	held := make([]memcat.Part, parts)
	partRowCounts := make([]int64, parts)
	var id int64
	for p := range held {
		for from := 0; from < partRows; from += heldRows {
			n := min(heldRows, partRows-from)
			bld := array.NewRecordBuilder(mem, schema)
			for range n {
				bld.Field(0).(*array.Int64Builder).Append(id)
				for f := range features {
					bld.Field(1 + f).(*array.Float32Builder).Append(float32(id) + float32(f))
				}
				bld.Field(1 + features).(*array.Int32Builder).Append(int32(id % 10))
				id++
			}
			held[p].Batches = append(held[p].Batches, bld.NewRecordBatch())
			bld.Release()
		}
		held[p].Rows = partRows
		partRowCounts[p] = partRows
	}
	cols := make([]int, len(fields))
	names := make([]string, len(fields))
	for i, f := range fields {
		cols[i], names[i] = i, f.Name
	}
	req := DefaultEpochRequest()
	req.Reader.BatchSize = 4096
	total := int64(parts * partRows)
	var bytes int64
	buffers := newBufferRecycler(mem, epochBuffersKept)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		req.Epoch = int64(i)
		order, err := cluster.NewEpochOrder(partRowCounts, req.Seed, req.Epoch, req.Shuffle, req.ChunkRows, req.WindowRows)
		if err != nil {
			b.Fatal(err)
		}
		s := EpochSlice{Columns: cols, Names: names, PartRows: partRowCounts, Request: req, From: 0, To: total}
		tc := &exec.TaskContext{Alloc: mem, BatchSize: 8192, Cache: exec.NewQueryCache()}
		r, err := newEpochReader(context.Background(), tc, buffers, s, order, held, schema, 24576)
		if err != nil {
			b.Fatal(err)
		}
		rows := int64(0)
		for r.Next() {
			rows += r.RecordBatch().NumRows()
		}
		if r.Err() != nil {
			b.Fatal(r.Err())
		}
		r.Release()
		if rows != total {
			b.Fatalf("read %d rows, want %d", rows, total)
		}
		bytes = rows * (8 + 4*features + 4)
	}
	b.SetBytes(bytes)
}
