package node

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/flightwire"
	"github.com/cachedb/cachedb/internal/mempool"
)

// epochTestRow is what every column of row id holds in epochTestParts.
func epochTestRow(id int64, nulls bool) string {
	n := fmt.Sprint(id % 7)
	if nulls && id%5 == 0 {
		n = "<nil>"
	}
	wide := make([]int64, 16)
	for k := range wide {
		wide[k] = id*16 + int64(k)
	}
	return fmt.Sprintf("%d %v %s [%v %v %v] s%d %v %v", id, float32(id)/2, n, float32(id), float32(id+1), float32(id+2), id, id%3 == 0, wide)
}

var epochTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "f", Type: arrow.PrimitiveTypes.Float32},
	{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "emb", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32)},
	{Name: "s", Type: arrow.BinaryTypes.String},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "wide", Type: arrow.FixedSizeListOf(16, arrow.PrimitiveTypes.Int32)}, // 64 bytes a row
}, nil)

// releaseTestParts releases the batches epochTestParts made.
func releaseTestParts(parts []memcat.Part) {
	for _, p := range parts {
		releaseAll(p.Batches)
	}
}

// epochTestParts holds partitions of the given row counts in batches of heldRows; the rows of
// partition 1 have NULLs in column n.
func epochTestParts(mem memory.Allocator, rows []int64, heldRows int64) []memcat.Part {
	parts := make([]memcat.Part, len(rows))
	var id int64
	for p, n := range rows {
		parts[p].Rows = n
		for from := int64(0); from < n; from += heldRows {
			bld := array.NewRecordBuilder(mem, epochTestSchema)
			for range min(heldRows, n-from) {
				bld.Field(0).(*array.Int64Builder).Append(id)
				bld.Field(1).(*array.Float32Builder).Append(float32(id) / 2)
				if p == 1 && id%5 == 0 {
					bld.Field(2).AppendNull()
				} else {
					bld.Field(2).(*array.Int32Builder).Append(int32(id % 7))
				}
				emb := bld.Field(3).(*array.FixedSizeListBuilder)
				emb.Append(true)
				for k := range int64(3) {
					emb.ValueBuilder().(*array.Float32Builder).Append(float32(id + k))
				}
				bld.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("s%d", id))
				bld.Field(5).(*array.BooleanBuilder).Append(id%3 == 0)
				wide := bld.Field(6).(*array.FixedSizeListBuilder)
				wide.Append(true)
				for k := range int32(16) {
					wide.ValueBuilder().(*array.Int32Builder).Append(int32(id)*16 + k)
				}
				id++
			}
			parts[p].Batches = append(parts[p].Batches, bld.NewRecordBatch())
			bld.Release()
		}
	}
	return parts
}

// Every reader of every rank gets rows whole: each column of a row it reads is that row's, for
// every layout (fixed-width with and without NULLs, narrow and wide fixed-size lists, strings,
// booleans) and windows gathered in one part or several, and the readers of an epoch read every
// row exactly once, shuffled or not. Nothing leaks.
func TestEpochReaderKeepsRowsWhole(t *testing.T) { testEpochReaderKeepsRowsWhole(t, false) }

// TestEpochReaderKeepsRowsWholeFromDisk is TestEpochReaderKeepsRowsWhole with every partition
// served from the disk tier (mapped Arrow IPC files).
func TestEpochReaderKeepsRowsWholeFromDisk(t *testing.T) { testEpochReaderKeepsRowsWhole(t, true) }

func testEpochReaderKeepsRowsWhole(t *testing.T, onDisk bool) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	buffers, held := epochTestBuffers()
	defer assertNothingHeld(t, held)
	partRows := []int64{1000, 777, 1500}
	parts := epochTestParts(mem, partRows, 333)
	if onDisk {
		parts = partsOnDisk(t, epochTestSchema, parts)
	}
	defer releaseTestParts(parts)
	var total int64
	for _, n := range partRows {
		total += n
	}
	cols := []int{0, 1, 2, 3, 4, 5, 6}
	names := []string{"id", "f", "n", "emb", "s", "b", "wide"}
	for _, shuffle := range []bool{true, false} {
		for _, world := range []int{1, 3} {
			for _, workers := range []int{1, 2} {
				for _, batch := range []int{7, 64} {
					name := fmt.Sprintf("shuffle=%v/world=%d/workers=%d/batch=%d", shuffle, world, workers, batch)
					t.Run(name, func(t *testing.T) {
						order, err := cluster.NewEpochOrder(partRows, 11, 2, shuffle, cluster.MixBlocks, 16, 128)
						if err != nil {
							t.Fatal(err)
						}
						seen := make(map[int64]int)
						for rank := range world {
							for worker := range workers {
								req := engine.DefaultEpochRequest()
								req.Seed, req.Epoch, req.Shuffle, req.ChunkRows, req.WindowRows = 11, 2, shuffle, 16, 128
								req.Reader = cluster.EpochReader{WorldSize: world, Rank: rank, NumWorkers: workers, Worker: worker, BatchSize: batch}
								_, rankRows := req.Reader.RankRange(total)
								s := engine.EpochSlice{Columns: cols, Names: names, PartRows: partRows, Request: req, From: 0, To: rankRows}
								tc := &exec.TaskContext{Alloc: mem, BatchSize: 100, Cache: exec.NewQueryCache()}
								target := int64(max(batch, 50/batch*batch))
								r, err := newEpochReader(context.Background(), tc, buffers, s, order, parts, epochTestSchema, target, 2*target)
								if err != nil {
									t.Fatal(err)
								}
								read, offGrid, firstRows := int64(0), 0, int64(-1)
								for r.Next() {
									rb := r.RecordBatch()
									if firstRows < 0 {
										firstRows = rb.NumRows()
									}
									if rb.NumRows() > target {
										t.Fatalf("rank %d worker %d: a record batch of %d rows, more than %d", rank, worker, rb.NumRows(), target)
									}
									if read += rb.NumRows(); read%int64(batch) != 0 {
										offGrid++
									}
									for i := range int(rb.NumRows()) {
										id := rb.Column(0).(*array.Int64).Value(i)
										wide := rb.Column(6).(*array.FixedSizeList)
										from, to := wide.ValueOffsets(i)
										got := fmt.Sprintf("%v %v %v %v %v %v %v", id, rb.Column(1).GetOneForMarshal(i), rb.Column(2).GetOneForMarshal(i),
											embedding(rb.Column(3), i), rb.Column(4).GetOneForMarshal(i), rb.Column(5).GetOneForMarshal(i),
											wide.ListValues().(*array.Int32).Int32Values()[from:to])
										if want := epochTestRow(id, id >= 1000 && id < 1777); got != want {
											t.Fatalf("rank %d worker %d: got row %q, want %q", rank, worker, got, want)
										}
										seen[id]++
									}
								}
								if r.Err() != nil {
									t.Fatal(r.Err())
								}
								r.Release()
								// Record batches end at the reader's batch ends (but for the last).
								if offGrid > 1 {
									t.Fatalf("rank %d worker %d: %d record batches end inside a batch of %d rows", rank, worker, offGrid, batch)
								}
								// The first is one batch, so that it leaves soon.
								if read > 0 && firstRows != min(read, int64(batch)) {
									t.Fatalf("rank %d worker %d: the first record batch has %d rows, want one batch of %d", rank, worker, firstRows, batch)
								}
							}
						}
						if int64(len(seen)) != total {
							t.Fatalf("read %d distinct rows of %d", len(seen), total)
						}
						for id, n := range seen {
							if n != 1 {
								t.Fatalf("row %d read %d times", id, n)
							}
						}
					})
				}
			}
		}
	}
}

// embedding is row i of a fixed-size list of float32 as [a b c].
func embedding(a arrow.Array, i int) string {
	l := a.(*array.FixedSizeList)
	from, to := l.ValueOffsets(i)
	return fmt.Sprint(l.ListValues().(*array.Float32).Float32Values()[from:to])
}

// A reader retained once takes two releases: the first leaves it streaming, the last frees
// what it holds.
func TestEpochReaderRetain(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	buffers, held := epochTestBuffers()
	defer assertNothingHeld(t, held)
	partRows := []int64{300, 200}
	parts := epochTestParts(mem, partRows, 64)
	defer releaseTestParts(parts)
	order, err := cluster.NewEpochOrder(partRows, 3, 1, true, cluster.MixBlocks, 16, 128)
	if err != nil {
		t.Fatal(err)
	}
	req := engine.DefaultEpochRequest()
	req.Seed, req.Epoch, req.ChunkRows, req.WindowRows = 3, 1, 16, 128
	s := engine.EpochSlice{Columns: []int{0, 4}, Names: []string{"id", "s"}, PartRows: partRows, Request: req, From: 0, To: 500}
	tc := &exec.TaskContext{Alloc: mem, BatchSize: 100, Cache: exec.NewQueryCache()}
	schema := arrow.NewSchema([]arrow.Field{epochTestSchema.Field(0), epochTestSchema.Field(4)}, nil)
	r, err := newEpochReader(context.Background(), tc, buffers, s, order, parts, schema, 50, 100)
	if err != nil {
		t.Fatal(err)
	}
	r.Retain()
	r.Release()
	var rows int64
	for r.Next() {
		rows += r.RecordBatch().NumRows()
	}
	if r.Err() != nil || rows != 500 {
		t.Fatalf("after one of two releases the reader read %d rows of 500, %v", rows, r.Err())
	}
	r.Release()
}

// A reader released after its first batch, or whose context ends mid-stream, stops gathering
// the part it gathers ahead and frees it, with everything else it holds (the checked
// allocator's size is back to zero).
func TestEpochReaderStoppedMidStreamFreesThePartGatheredAhead(t *testing.T) {
	for _, cancelFirst := range []bool{false, true} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		buffers, held := epochTestBuffers()
		partRows := []int64{3000, 2000}
		parts := epochTestParts(mem, partRows, 64)
		order, err := cluster.NewEpochOrder(partRows, 3, 1, true, cluster.MixBlocks, 16, 128)
		if err != nil {
			t.Fatal(err)
		}
		req := engine.DefaultEpochRequest()
		req.Seed, req.Epoch, req.ChunkRows, req.WindowRows = 3, 1, 16, 128
		s := engine.EpochSlice{Columns: []int{0, 4}, Names: []string{"id", "s"}, PartRows: partRows, Request: req, From: 0, To: 5000}
		tc := &exec.TaskContext{Alloc: mem, BatchSize: 100, Cache: exec.NewQueryCache()}
		schema := arrow.NewSchema([]arrow.Field{epochTestSchema.Field(0), epochTestSchema.Field(4)}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		r, err := newEpochReader(ctx, tc, buffers, s, order, parts, schema, 50, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Next() {
			t.Fatalf("no first batch: %v", r.Err())
		}
		if cancelFirst {
			cancel()
			for r.Next() {
			}
			if !errors.Is(r.Err(), context.Canceled) {
				t.Fatalf("a reader whose context ended reports %v, want context.Canceled", r.Err())
			}
		}
		r.Release()
		cancel()
		assertNothingHeld(t, held)
		releaseTestParts(parts)
		mem.AssertSize(t, 0)
	}
}

// A node asked for a segment of a dataset generation it does not hold (it restarted after the
// head planned the read, and the head has not made its partitions again elsewhere yet) answers
// a retryable Unavailable that names the dataset and the segment's partitions, not NotFound.
func TestReadEpochOfADatasetNotHeldIsUnavailable(t *testing.T) {
	eng, err := engine.New(engine.Config{NoDemo: true})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := New(Config{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	partRows := []int64{100, 300, 50}
	req := engine.DefaultEpochRequest()
	req.Shuffle, req.Seed, req.ChunkRows, req.WindowRows = false, 1, 16, 64
	// Without shuffling, rows 120 to 180 of the epoch are rows of partition 1 only.
	s := engine.EpochSlice{Dataset: "samples", Generation: 4, Columns: []int{0}, Names: []string{"id"}, PartRows: partRows, Request: req, From: 120, To: 180, Partitions: []int{1}}
	_, err = rt.ReadEpoch(context.Background(), s)
	if errs.CategoryOf(err) != errs.Unavailable {
		t.Fatalf("reading a dataset not held: %v, want Unavailable", err)
	}
	for _, want := range []string{`partition 1 of dataset "samples"`, "generation 4", "again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err, want)
		}
	}
	if got := slicePartitions(engine.EpochSlice{PartRows: partRows, Request: req, From: 0, To: 450}); fmt.Sprint(got) != "[0 1 2]" {
		t.Errorf("a slice naming no partitions reads %v", got)
	}
}

// partsOnDisk moves in-memory parts to the disk tier (files in a test directory), dropped when
// the test ends.
func partsOnDisk(t testing.TB, schema *arrow.Schema, parts []memcat.Part) []memcat.Part {
	t.Helper()
	out := make([]memcat.Part, len(parts))
	for i, p := range parts {
		data := memcat.NewPartData(schema, p.Batches)
		if _, err := data.ToDisk(filepath.Join(t.TempDir(), fmt.Sprintf("p%d.arrow", i))); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(data.Drop)
		out[i] = memcat.TieredPart(data)
	}
	return out
}

// A read split into one stream per node (each the reader's rows of the partitions that node
// holds, every batch saying which of the reader's rows it carries) reassembles exactly the rows
// one stream of every partition gives, whatever the placement; and the reader's batches mix
// the partitions.
func TestEpochNodeStreamsReassembleTheOrder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	buffers, held := epochTestBuffers()
	defer assertNothingHeld(t, held)
	partRows := []int64{3000, 2500, 4100, 1800, 2999}
	parts := epochTestParts(mem, partRows, 700)
	defer releaseTestParts(parts)
	var total int64
	for _, n := range partRows {
		total += n
	}
	firstID := make([]int64, len(partRows)+1) // partition of a row id: ids count partitions in order
	for p, n := range partRows {
		firstID[p+1] = firstID[p] + n
	}
	partOf := func(id int64) int {
		p := 0
		for id >= firstID[p+1] {
			p++
		}
		return p
	}
	order, err := cluster.NewEpochOrder(partRows, 5, 1, true, cluster.MixBlocks, 32, 512)
	if err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{epochTestSchema.Field(0), epochTestSchema.Field(2), epochTestSchema.Field(4)}, nil)
	// read returns the reader's rows (ids) that the segment of partitions gives, placed by the
	// batches' runs (-1 where it gives none).
	read := func(r cluster.EpochReader, partitions []int, rows int64) []int64 {
		req := engine.DefaultEpochRequest()
		req.Seed, req.Epoch, req.ChunkRows, req.WindowRows, req.Reader, req.NodeStreams = 5, 1, 32, 512, r, true
		s := engine.EpochSlice{Columns: []int{0, 2, 4}, Names: []string{"id", "n", "s"}, PartRows: partRows, Request: req, From: 0, To: r.Share(total).Rows(), Partitions: partitions}
		tc := &exec.TaskContext{Alloc: mem, BatchSize: 100, Cache: exec.NewQueryCache()}
		es, err := newEpochReader(context.Background(), tc, buffers, s, order, parts, schema, 300, 900)
		if err != nil {
			t.Fatal(err)
		}
		defer es.Release()
		placed := make([]int64, rows)
		for i := range placed {
			placed[i] = -1
		}
		var firstBatchRows, inFirstBatch int64 // the stream's first record batch; its rows of the reader's first batch
		for es.Next() {
			rb := es.RecordBatch()
			meta := es.AppMetadata()
			var at int64
			for k := 0; k+16 <= len(meta); k += 16 {
				u, n := int64(binary.LittleEndian.Uint64(meta[k:])), int64(binary.LittleEndian.Uint64(meta[k+8:]))
				for i := range n {
					placed[u+i] = rb.Column(0).(*array.Int64).Value(int(at + i))
				}
				if firstBatchRows == 0 {
					inFirstBatch += max(0, min(u+n, int64(r.BatchSize))-u)
				}
				at += n
			}
			if at != rb.NumRows() {
				t.Fatalf("a batch of %d rows describes %d", rb.NumRows(), at)
			}
			if firstBatchRows == 0 {
				firstBatchRows = rb.NumRows()
			}
		}
		if es.Err() != nil {
			t.Fatal(es.Err())
		}
		// A stream holding rows of the reader's first batch sends those first, and only those,
		// so that the reader's first batch leaves as soon as can be.
		var held int64
		for _, id := range placed[:min(rows, int64(r.BatchSize))] {
			if id >= 0 {
				held++
			}
		}
		if held > 0 && (inFirstBatch != held || firstBatchRows != held) {
			t.Fatalf("partitions %v: the first record batch has %d rows, %d of the reader's first batch; the stream holds %d of those",
				partitions, firstBatchRows, inFirstBatch, held)
		}
		return placed
	}
	for _, placement := range [][][]int{{{0, 1, 2, 3, 4}}, {{0, 2}, {1, 3, 4}}, {{4}, {0, 1}, {2, 3}}} {
		for _, r := range []cluster.EpochReader{
			{WorldSize: 1, NumWorkers: 1, BatchSize: 100},
			{WorldSize: 3, Rank: 1, NumWorkers: 2, Worker: 1, BatchSize: 64, WorkerBatches: 3},
		} {
			share := r.Share(total)
			var rows int64
			r.Ranges(share.Rows(), 0, share.Rows(), func(t0, t1 int64) bool { rows += t1 - t0; return true })
			whole := read(r, nil, rows)
			got := make([]int64, rows)
			for i := range got {
				got[i] = -1
			}
			for _, node := range placement {
				for u, id := range read(r, node, rows) {
					if id < 0 {
						continue
					}
					if got[u] >= 0 {
						t.Fatalf("placement %v: row %d given twice", placement, u)
					}
					if !slices.Contains(node, partOf(id)) {
						t.Fatalf("placement %v: node %v gave a row of partition %d", placement, node, partOf(id))
					}
					got[u] = id
				}
			}
			if !slices.Equal(got, whole) || slices.Contains(whole, -1) {
				t.Fatalf("placement %v reader %+v: the node streams reassemble another order", placement, r)
			}
			// Every stretch of two blocks of the epoch holds rows of every partition.
			if r.WorldSize == 1 {
				span := 2 * int64(cluster.BlockRows)
				for b := int64(0); b+span <= rows; b += span / 2 {
					seen := map[int]bool{}
					for _, id := range whole[b : b+span] {
						seen[partOf(id)] = true
					}
					if len(seen) < len(partRows) {
						t.Fatalf("rows %d to %d hold partitions %v only", b, b+span, seen)
					}
				}
			}
		}
	}
}

// epochTestBuffers returns the allocator a runtime gathers training reads with and the
// reservation that counts what its batches hold.
func epochTestBuffers() (*flightwire.Allocator, *mempool.Reservation) {
	held := mempool.Unlimited().Reserve(mempool.Consumer{Name: epochBuffersConsumer})
	return flightwire.NewAllocator(held), held
}

// assertNothingHeld fails t when batches still hold buffers counted in held.
func assertNothingHeld(t *testing.T, held *mempool.Reservation) {
	t.Helper()
	if n := held.Size(); n != 0 {
		t.Errorf("training reads' batches still hold %d bytes", n)
	}
}

// A reader's batch size rounds a segment's batches up to a multiple of it, but a batch size
// of more rows than a node should gather at once does not make the node gather them at once.
func TestEpochSizesBoundWhatANodeGathers(t *testing.T) {
	for _, c := range []struct {
		rowBytes   int64
		batch      int
		wantTarget int64
	}{
		{72, 0, epochBatchBytes / 72},
		{72, 4096, epochBatchBytes / 72 / 4096 * 4096},
		{72, 100_000, 100_000},                  // 7 MB: one batch of the reader's
		{1024, 1 << 20, epochBatchBytes / 1024}, // 1 GiB: not at once
		{72, 1 << 30, epochBatchBytes / 72},
	} {
		target, part := epochSizes(c.rowBytes, c.batch)
		if target != c.wantTarget || part != target {
			t.Errorf("rows of %d bytes, batch size %d: target %d, part %d; want %d", c.rowBytes, c.batch, target, part, c.wantTarget)
		}
		if part*c.rowBytes > epochAlignedBytes {
			t.Errorf("rows of %d bytes, batch size %d: parts of %d bytes", c.rowBytes, c.batch, part*c.rowBytes)
		}
	}
}
