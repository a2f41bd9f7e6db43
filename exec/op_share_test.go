package exec

import (
	"cmp"
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

// AssignShares keeps its shares in a heap; it must divide exactly as a scan of every share for
// the least loaded, lowest index does, on many ties (few distinct sizes), zero and negative
// sizes, more shares than partitions, and one share.
func TestAssignSharesMatchesLinearScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		sizes := make([]int64, rng.IntN(300))
		spread := []int64{1, 3, 1000, 1 << 40}[i%4]
		for j := range sizes {
			sizes[j] = rng.Int64N(spread + 1)
			if i%7 == 0 {
				sizes[j] -= spread / 2
			}
		}
		of := 1 + rng.IntN(1+[]int{3, 40, 400}[i%3])
		got, want := AssignShares(sizes, of), assignSharesLinear(sizes, of)
		if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
			t.Fatalf("sizes %v over %d shares:\n got %v\nwant %v", sizes, of, got, want)
		}
		for s := range got {
			if (got[s] == nil) != (want[s] == nil) {
				t.Fatalf("sizes %v over %d shares: share %d is %#v, want %#v", sizes, of, s, got[s], want[s])
			}
		}
	}
	if got := AssignShares(nil, 3); len(got) != 3 || got[0] != nil || got[1] != nil || got[2] != nil {
		t.Errorf("no partitions over 3 shares: %#v", got)
	}
}

// assignSharesLinear is the straightforward largest-first division: sort by size, stable, and
// give each partition to the first share with the least so far.
func assignSharesLinear(sizes []int64, of int) [][]int {
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sizes[b], sizes[a]) })
	shares := make([][]int, of)
	load := make([]int64, of)
	for _, p := range order {
		least := 0
		for s := 1; s < of; s++ {
			if load[s] < load[least] {
				least = s
			}
		}
		shares[least] = append(shares[least], p)
		load[least] += sizes[p]
	}
	for _, s := range shares {
		slices.Sort(s)
	}
	return shares
}

// partitionsOnly is an input that only reports a partition count.
type partitionsOnly struct {
	Operator
	n int
}

func (p partitionsOnly) Partitions() int { return p.n }
