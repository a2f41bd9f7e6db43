package main

import (
	"math"
	"slices"
	"testing"
)

// The figures the benchmark reports, on an assignment small enough to check by hand.
func TestMeasure(t *testing.T) {
	sizes := []int64{10, 20, 30, 40}
	b, ok := measure(sizes, [][]int{{0, 3}, {1}, {2}}) // loads 50, 20, 30; mean 100/3
	if !ok {
		t.Fatal("a valid assignment rejected")
	}
	mean := 100.0 / 3
	sd := math.Sqrt(((50-mean)*(50-mean) + (20-mean)*(20-mean) + (30-mean)*(30-mean)) / 3)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"max/mean", b.MaxOverMean, 50 / mean},
		{"min/mean", b.MinOverMean, 20 / mean},
		{"cv", b.CV, sd / mean},
		{"bound", b.LowerBound, 40},
		{"max/bound", b.MaxOverBound, 50.0 / 40},
	} {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if b.MaxTasks != 2 || b.MinTasks != 1 || b.TotalBytes != 100 {
		t.Errorf("tasks per node %d-%d, total %d", b.MinTasks, b.MaxTasks, b.TotalBytes)
	}
	if _, ok := measure(sizes, [][]int{{0, 3}, {1}}); ok {
		t.Error("an assignment missing a task accepted")
	}
	if _, ok := measure(sizes, [][]int{{0, 3}, {1, 2}, {2}}); ok {
		t.Error("an assignment naming a task twice accepted")
	}
}

func TestBaselines(t *testing.T) {
	sizes := make([]int64, 10)
	if got := contiguous(sizes, 3); !slices.EqualFunc(got, [][]int{{0, 1, 2}, {3, 4, 5}, {6, 7, 8, 9}}, slices.Equal[[]int]) {
		t.Errorf("contiguous: %v", got)
	}
	if got := roundRobin(sizes, 3); !slices.EqualFunc(got, [][]int{{0, 3, 6, 9}, {1, 4, 7}, {2, 5, 8}}, slices.Equal[[]int]) {
		t.Errorf("round-robin: %v", got)
	}
}

// The generator is deterministic, has the tails it claims, and row groups add up to files.
func TestWorkload(t *testing.T) {
	s := defaultShape(20_000, 7)
	files := s.fileSizes()
	if !slices.Equal(files, s.fileSizes()) {
		t.Fatal("file sizes differ between two calls with one seed")
	}
	if slices.Equal(files, defaultShape(20_000, 8).fileSizes()) {
		t.Fatal("another seed gives the same file sizes")
	}
	w := describe(files, s.rowGroups(files))
	if w.SmallFiles < 1000 || w.HugeFiles < 20 || w.MedianFileMiB < 100 || w.MedianFileMiB > 160 {
		t.Errorf("workload %+v lacks the small and huge tails around 128 MiB", w)
	}
	// Small files are the recent partitions, listed last.
	var smallEarly int
	for _, f := range files[:len(files)*8/10] {
		if f < 8*mib {
			smallEarly++
		}
	}
	if smallEarly > 0 {
		t.Errorf("%d small files among the compacted history", smallEarly)
	}
	var fileTotal, groupTotal int64
	var largestGroup int64
	for _, f := range files {
		fileTotal += f
	}
	for _, g := range s.rowGroups(files) {
		groupTotal += g
		largestGroup = max(largestGroup, g)
	}
	if fileTotal != groupTotal {
		t.Errorf("row groups hold %d bytes, files %d", groupTotal, fileTotal)
	}
	if limit := int64(s.RowGroupMiB * (1 + s.RowGroupJitter) * float64(mib)); largestGroup > limit {
		t.Errorf("row group of %d bytes, over %d", largestGroup, limit)
	}
}
