package main

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The uniform expectation agrees with sampling, and equal groups give the closed form.
func TestUniformDistinct(t *testing.T) {
	sizes := []int64{500, 1500, 3000, 5000}
	var total int64
	var owner []int
	for g, n := range sizes {
		total += n
		for range n {
			owner = append(owner, g)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const sample, trials = 5, 20000
	var seen float64
	for range trials {
		got := map[int]bool{}
		for _, i := range rng.Perm(int(total))[:sample] {
			got[owner[i]] = true
		}
		seen += float64(len(got))
	}
	if want, got := uniformDistinct(sizes, sample), seen/trials; math.Abs(want-got) > 0.03 {
		t.Errorf("uniformDistinct %.3f, sampled %.3f", want, got)
	}
	if got := uniformDistinct([]int64{10, 10}, 20); got != 2 {
		t.Errorf("a sample of every row holds every group: %v", got)
	}
}

func TestSpearmanAndSameRank(t *testing.T) {
	n := 1000
	id, rev := make([]uint32, n), make([]uint32, n)
	for i := range id {
		id[i], rev[i] = uint32(i), uint32(n-1-i)
	}
	if r := spearman(id, id); math.Abs(r-1) > 1e-12 {
		t.Errorf("spearman of an order with itself %v", r)
	}
	if r := spearman(id, rev); math.Abs(r+1) > 1e-12 {
		t.Errorf("spearman of an order with its reverse %v", r)
	}
	for _, f := range sameRank(id, id, 3) {
		if f != 1 {
			t.Errorf("same order: same-rank fraction %v", f)
		}
	}
	// Reversed, world 2: every row changes rank.
	for _, f := range sameRank(id, rev, 2) {
		if f != 0 {
			t.Errorf("reversed order, world 2: same-rank fraction %v", f)
		}
	}
	// rankOf agrees with exact shares: rank k starts at floor(n·k/w).
	for _, c := range []struct{ n, w int64 }{{10, 3}, {1000, 7}, {5, 5}, {7, 2}} {
		for k := range c.w {
			start, end := c.n*k/c.w, c.n*(k+1)/c.w
			for g := start; g < end; g++ {
				if got := rankOf(g, c.n, int(c.w)); got != int(k) {
					t.Errorf("rankOf(%d, %d, %d) = %d, want %d", g, c.n, c.w, got, k)
				}
			}
		}
	}
}

func TestDistinctCounter(t *testing.T) {
	c := newDistinctCounter(4, 3)
	for g, v := range []int{0, 0, 1, 2, 2, 2, 3} { // groups {0,1}, {2}; the last is partial
		c.add(int64(g), v)
	}
	if c.mean() != 1.5 {
		t.Errorf("mean distinct %v, want 1.5", c.mean())
	}
}
