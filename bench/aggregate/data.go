package main

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Shape of the generated table t(k, v, x, s).
const (
	distinctKeys = 1000      // k is in [0, distinctKeys)
	xRange       = 1_000_000 // x is in [0, xRange)
)

var labels = []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}

// tableSchema is the generated table's schema: the engine's canonical types, so no cast sits
// between the scan and the aggregate.
var tableSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	{Name: "x", Type: arrow.PrimitiveTypes.Int64},
	{Name: "s", Type: arrow.BinaryTypes.String},
}, nil)

// splitmix64 is a tiny deterministic generator: the same seed gives the same table on every
// machine and Go version, which math/rand does not promise.
type splitmix64 uint64

func (s *splitmix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// generator produces the table in batches; batch i depends only on the seed and i.
type generator struct {
	rows, batchRows int
	seed            uint64
}

func (g generator) batches() int { return (g.rows + g.batchRows - 1) / g.batchRows }

// batch builds batch i. v has two decimals so that sums are exact enough to compare across
// engines; x is uniform, so `x > c` keeps about (xRange-c)/xRange of the rows.
func (g generator) batch(mem memory.Allocator, i int) (arrow.RecordBatch, error) {
	n := min(g.batchRows, g.rows-i*g.batchRows)
	if n <= 0 {
		return nil, fmt.Errorf("batch %d is past the end of %d rows", i, g.rows)
	}
	rng := splitmix64(g.seed ^ uint64(i)*0x2545f4914f6cdd1d)
	b := array.NewRecordBuilder(mem, tableSchema)
	defer b.Release()
	k := b.Field(0).(*array.Int64Builder)
	v := b.Field(1).(*array.Float64Builder)
	x := b.Field(2).(*array.Int64Builder)
	s := b.Field(3).(*array.StringBuilder)
	k.Reserve(n)
	v.Reserve(n)
	x.Reserve(n)
	s.Reserve(n)
	for r := 0; r < n; r++ {
		k.UnsafeAppend(int64(rng.next() % distinctKeys))
		v.UnsafeAppend(float64(rng.next()%100_000) / 100)
		x.UnsafeAppend(int64(rng.next() % xRange))
		s.Append(labels[rng.next()%uint64(len(labels))])
	}
	return b.NewRecordBatch(), nil
}
