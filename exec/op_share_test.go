package exec

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestShareDividesPartitionsExactlyOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 5, 7} {
		for of := 1; of <= 4; of++ {
			seen := make([]int, n)
			for share := range of {
				op, err := NewShare(partitionsOnly{n: n}, share, of, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range op.(*Share).partitions {
					seen[p]++
				}
			}
			for p, c := range seen {
				if c != 1 {
					t.Errorf("n=%d of=%d: input partition %d in %d shares", n, of, p, c)
				}
			}
		}
	}
	if _, err := NewShare(partitionsOnly{n: 3}, 2, 2, nil); err == nil {
		t.Error("share 2 of 2 accepted")
	}
	if _, err := NewShare(partitionsOnly{n: 3}, 0, 2, []int64{1}); err == nil {
		t.Error("sizes of the wrong length accepted")
	}
}

// Largest-first greedy assignment keeps every share within one partition's size of the
// lightest, and is a pure function of the sizes (every node computes the same division).
func TestAssignSharesBalancesBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		sizes := make([]int64, 1+rng.IntN(60))
		var largest int64
		for i := range sizes {
			sizes[i] = 1 + rng.Int64N(1000)
			largest = max(largest, sizes[i])
		}
		of := 1 + rng.IntN(8)
		shares := AssignShares(sizes, of)
		if !slices.EqualFunc(shares, AssignShares(slices.Clone(sizes), of), slices.Equal[[]int]) {
			t.Fatal("assignment is not deterministic")
		}
		loads := make([]int64, of)
		count := 0
		for s, parts := range shares {
			for _, p := range parts {
				loads[s] += sizes[p]
				count++
			}
		}
		if count != len(sizes) {
			t.Fatalf("%d partitions assigned, want %d", count, len(sizes))
		}
		if slices.Max(loads)-slices.Min(loads) > largest {
			t.Errorf("loads %v differ by more than the largest partition %d", loads, largest)
		}
	}
}

// partitionsOnly is an input that only reports a partition count.
type partitionsOnly struct {
	Operator
	n int
}

func (p partitionsOnly) Partitions() int { return p.n }
