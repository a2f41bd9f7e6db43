package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/engine"
)

// checksum summarizes an aggregate result so two systems' answers can be compared without
// shipping rows around: row count, and the sums of each output column over all rows.
type checksum struct {
	Rows     int64   `json:"rows"`
	SumK     int64   `json:"sum_k"`
	SumCount int64   `json:"sum_count"`
	SumSumV  float64 `json:"sum_sum_v"`
	SumAvgX  float64 `json:"sum_avg_x"`
}

// agrees reports whether two checksums describe the same answer: counts exactly, float sums to
// a relative 1e-9 (summation order differs between engines and between runs).
func (c checksum) agrees(o checksum) bool {
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b))) }
	return c.Rows == o.Rows && c.SumK == o.SumK && c.SumCount == o.SumCount && close(c.SumSumV, o.SumSumV) && close(c.SumAvgX, o.SumAvgX)
}

// timing is the best and median of a set of runs, in seconds.
type timing struct {
	Runs   []float64 `json:"runs_s"`
	Best   float64   `json:"best_s"`
	Median float64   `json:"median_s"`
}

func newTiming(runs []float64) timing {
	sorted := append([]float64(nil), runs...)
	sort.Float64s(sorted)
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	return timing{Runs: runs, Best: sorted[0], Median: med}
}

// timeEngine runs sql runs times through the engine, reading every batch, and returns the
// timings and the checksum of the last run's answer.
func timeEngine(ctx context.Context, eng *engine.Engine, sql string, runs int) (timing, checksum, error) {
	var secs []float64
	var sum checksum
	for i := 0; i < runs; i++ {
		began := time.Now()
		res, err := eng.Execute(ctx, sql, nil)
		if err != nil {
			return timing{}, checksum{}, fmt.Errorf("running %q: %w", sql, err)
		}
		if res.Reader == nil {
			return timing{}, checksum{}, fmt.Errorf("%q returned no rows", sql)
		}
		sum, err = summarize(res.Reader)
		res.Reader.Release()
		if err != nil {
			return timing{}, checksum{}, err
		}
		secs = append(secs, time.Since(began).Seconds())
	}
	return newTiming(secs), sum, nil
}

// summarize reads (k, count, sum_v, avg_x) batches into a checksum.
func summarize(rdr array.RecordReader) (checksum, error) {
	var c checksum
	for rdr.Next() {
		b := rdr.RecordBatch()
		if b.NumCols() != 4 {
			return c, fmt.Errorf("result has %d columns, want 4", b.NumCols())
		}
		for r := 0; r < int(b.NumRows()); r++ {
			k, err1 := number(b.Column(0), r)
			n, err2 := number(b.Column(1), r)
			sv, err3 := number(b.Column(2), r)
			ax, err4 := number(b.Column(3), r)
			for _, err := range []error{err1, err2, err3, err4} {
				if err != nil {
					return c, err
				}
			}
			c.Rows++
			c.SumK += int64(k)
			c.SumCount += int64(n)
			c.SumSumV += sv
			c.SumAvgX += ax
		}
	}
	return c, rdr.Err()
}

// number reads a numeric cell of any type the engine may return for these aggregates
// (integers, floats, decimals) as float64.
func number(col arrow.Array, row int) (float64, error) {
	if col.IsNull(row) {
		return 0, nil
	}
	switch c := col.(type) {
	case *array.Int64:
		return float64(c.Value(row)), nil
	case *array.Float64:
		return c.Value(row), nil
	case *array.Decimal128:
		return c.Value(row).ToFloat64(c.DataType().(*arrow.Decimal128Type).Scale), nil
	case *array.Decimal256:
		return c.Value(row).ToFloat64(c.DataType().(*arrow.Decimal256Type).Scale), nil
	}
	f, err := strconv.ParseFloat(col.ValueStr(row), 64)
	if err != nil {
		return 0, fmt.Errorf("result column of type %s is not numeric", col.DataType())
	}
	return f, nil
}
