package main

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// divide deals the rows, in order, into n streams of near-equal rows (as many as cachedb has
// endpoints), in record batches of at most batchRows rows.
func TestDivide(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for range 200 {
		var batches []arrow.RecordBatch
		var id int64
		for range rng.IntN(6) {
			bld := array.NewRecordBuilder(mem, schema)
			for range rng.IntN(50) {
				bld.Field(0).(*array.Int64Builder).Append(id)
				id++
			}
			batches = append(batches, bld.NewRecordBatch())
			bld.Release()
		}
		n, batchRows := 1+rng.IntN(7), int64(1+rng.IntN(20))
		shares := divide(batches, n, batchRows)
		if len(shares) != n {
			t.Fatalf("%d shares, want %d", len(shares), n)
		}
		var next int64
		for s, share := range shares {
			var rows int64
			for _, b := range share {
				if b.NumRows() > batchRows {
					t.Fatalf("a batch of %d rows, more than %d", b.NumRows(), batchRows)
				}
				for _, v := range b.Column(0).(*array.Int64).Int64Values() {
					if v != next {
						t.Fatalf("share %d: row %d where %d comes next", s, v, next)
					}
					next++
				}
				rows += b.NumRows()
			}
			if want := id*int64(s+1)/int64(n) - id*int64(s)/int64(n); rows != want {
				t.Fatalf("share %d of %d has %d of %d rows, want %d", s, n, rows, id, want)
			}
		}
		if next != id {
			t.Fatalf("%d of %d rows dealt", next, id)
		}
	}
}
