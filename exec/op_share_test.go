package exec

import (
	"testing"
)

func TestShareDividesPartitionsExactlyOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 5, 7} {
		for of := 1; of <= 4; of++ {
			seen := make([]int, n)
			for share := range of {
				op, err := NewShare(partitionsOnly{n: n}, share, of)
				if err != nil {
					t.Fatal(err)
				}
				s := op.(*Share)
				for p := range s.Partitions() {
					seen[s.share+p*s.of]++
				}
			}
			for p, c := range seen {
				if c != 1 {
					t.Errorf("n=%d of=%d: input partition %d in %d shares", n, of, p, c)
				}
			}
		}
	}
	if _, err := NewShare(partitionsOnly{n: 3}, 2, 2); err == nil {
		t.Error("share 2 of 2 accepted")
	}
}

// partitionsOnly is an input that only reports a partition count.
type partitionsOnly struct {
	Operator
	n int
}

func (p partitionsOnly) Partitions() int { return p.n }
