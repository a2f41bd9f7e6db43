package main

import (
	"math"

	"github.com/cachedb/cachedb/cluster"
)

// dataset is a synthetic dataset: partition row counts, and the data files each partition was
// made from (a partition's rows are its files' rows, file after file, as a partition made from
// scan tasks holds them). Rows are numbered globally: partition 0's rows, then partition 1's, …
type dataset struct {
	partRows  []int64
	partStart []int64
	// filesPer is how many files each partition holds, of equal size (the last takes the rest).
	filesPer int
	rows     int64
}

// newDataset cuts rows into parts partitions whose sizes vary by up to ±25 % (deterministic),
// each made from filesPer files.
func newDataset(rows int64, parts, filesPer int) dataset {
	d := dataset{filesPer: filesPer, rows: rows}
	weights := make([]float64, parts)
	var sum float64
	for p := range weights {
		weights[p] = 0.75 + 0.5*float64(splitMix(uint64(p))>>11)/float64(1<<53)
		sum += weights[p]
	}
	var at int64
	for p := range parts {
		n := int64(float64(rows) * weights[p] / sum)
		if p == parts-1 {
			n = rows - at
		}
		d.partStart = append(d.partStart, at)
		d.partRows = append(d.partRows, n)
		at += n
	}
	return d
}

// file returns the file of row r of partition p.
func (d dataset) file(p int, r int64) int {
	n := d.partRows[p]
	if n == 0 {
		return p * d.filesPer
	}
	return p*d.filesPer + int(r*int64(d.filesPer)/n)
}

// fileRows returns the row count of every file.
func (d dataset) fileRows() []int64 {
	out := make([]int64, len(d.partRows)*d.filesPer)
	for p, n := range d.partRows {
		for f := range d.filesPer {
			lo := (int64(f)*n + int64(d.filesPer) - 1) / int64(d.filesPer)
			hi := (int64(f+1)*n + int64(d.filesPer) - 1) / int64(d.filesPer)
			out[p*d.filesPer+f] = hi - lo
		}
	}
	return out
}

// epochPositions returns, for every row (global number), its position in the epoch order.
// visit, when not nil, is called with every position's partition and file in epoch order. It
// walks the order's runs (cluster.EpochOrder.Runs) and gathers their windows, as a data node does.
func epochPositions(o *cluster.EpochOrder, d dataset, pos []uint32, visit func(g int64, part, file int)) {
	type window struct {
		index int
		rows  []int64 // partition rows in sequence order
	}
	current := map[int]*window{}
	o.Runs(0, o.Rows(), func(g int64, p int, j, n int64) bool {
		w, i := o.Window(j)
		win := current[p]
		if win == nil || win.index != w {
			chunks, perm := o.Gather(p, w)
			var dealt []int64
			for _, c := range chunks {
				for r := c.From; r < c.To; r++ {
					dealt = append(dealt, r)
				}
			}
			win = &window{index: w, rows: dealt}
			if perm != nil {
				win.rows = make([]int64, len(dealt))
				for k, x := range perm {
					win.rows[k] = dealt[x]
				}
			}
			current[p] = win
		}
		for k := range n {
			r := win.rows[i+k]
			pos[d.partStart[p]+r] = uint32(g + k)
			if visit != nil {
				visit(g+k, p, d.file(p, r))
			}
		}
		return true
	})
}

// distinctCounter counts the distinct values among consecutive groups of size positions.
type distinctCounter struct {
	size       int64
	stamp      []int64
	distinct   int64
	groups     int64
	sumDistict int64
}

func newDistinctCounter(values int, size int64) *distinctCounter {
	c := &distinctCounter{size: size, stamp: make([]int64, values)}
	for i := range c.stamp {
		c.stamp[i] = -1
	}
	return c
}

// add counts value v at position g; only whole groups count.
func (c *distinctCounter) add(g int64, v int) {
	group := g / c.size
	if c.stamp[v] != group {
		c.stamp[v] = group
		c.distinct++
	}
	if (g+1)%c.size == 0 {
		c.sumDistict += c.distinct
		c.groups++
		c.distinct = 0
	}
}

func (c *distinctCounter) mean() float64 {
	if c.groups == 0 {
		return math.NaN()
	}
	return float64(c.sumDistict) / float64(c.groups)
}

// uniformDistinct is the expected number of distinct groups (of the given sizes, total rows in
// all) among sample rows drawn uniformly without replacement: the sum over groups of the chance
// that the sample holds one of its rows, 1 − C(total−n, sample)/C(total, sample).
func uniformDistinct(sizes []int64, sample int64) float64 {
	var total int64
	for _, n := range sizes {
		total += n
	}
	sample = min(sample, total)
	lchoose := func(n, k int64) float64 {
		a, _ := math.Lgamma(float64(n + 1))
		b, _ := math.Lgamma(float64(k + 1))
		c, _ := math.Lgamma(float64(n - k + 1))
		return a - b - c
	}
	var e float64
	for _, n := range sizes {
		if total-n < sample {
			e++
			continue
		}
		e += 1 - math.Exp(lchoose(total-n, sample)-lchoose(total, sample))
	}
	return e
}

// spearman is the rank correlation of two epochs' positions of the same rows. Positions are a
// permutation of [0, n), so they are their own ranks.
func spearman(a, b []uint32) float64 {
	n := float64(len(a))
	if n < 2 {
		return math.NaN()
	}
	var d2 float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		d2 += d * d
	}
	return 1 - 6*d2/(n*(n*n-1))
}

// rankOf is the rank whose share (shares=exact, cluster.EpochReader.RankRange) holds epoch
// position g of n among world ranks: the largest k with floor(n·k/world) ≤ g.
func rankOf(g, n int64, world int) int {
	w := int64(world)
	return int(((g+1)*w+n-1)/n - 1)
}

// sameRank returns, per rank, the fraction of the rows of its share in epoch a that are in its
// share in epoch b too.
func sameRank(a, b []uint32, world int) []float64 {
	n := int64(len(a))
	kept := make([]int64, world)
	held := make([]int64, world)
	for i := range a {
		k := rankOf(int64(a[i]), n, world)
		held[k]++
		if rankOf(int64(b[i]), n, world) == k {
			kept[k]++
		}
	}
	out := make([]float64, world)
	for k := range out {
		out[k] = float64(kept[k]) / float64(max(held[k], 1))
	}
	return out
}

// splitMix is one SplitMix64 step, for the dataset's deterministic sizes.
func splitMix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
