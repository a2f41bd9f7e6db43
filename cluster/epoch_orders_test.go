package cluster

import (
	"slices"
	"testing"
)

// TestEpochOrdersAreMadeOnceAndKeepTheOrder: a cached order is the one NewEpochOrder makes, is
// shared by equal arguments and not by others; an order that keeps its partitions' dealt chunks
// gathers every window exactly as one that deals them again.
func TestEpochOrdersAreMadeOnceAndKeepTheOrder(t *testing.T) {
	parts := []int64{10_000, 7_777, 0, 12_345}
	orders := NewEpochOrders(2)
	a, err := orders.Get(parts, 7, 3, true, MixBlocks, 64, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := orders.Get(slices.Clone(parts), 7, 3, true, MixBlocks, 64, 1024); b != a {
		t.Error("equal arguments made the order again")
	}
	for _, other := range []func() (*EpochOrder, error){
		func() (*EpochOrder, error) { return orders.Get(parts, 7, 4, true, MixBlocks, 64, 1024) },
		func() (*EpochOrder, error) {
			return orders.Get([]int64{10_000, 7_777, 1, 12_345}, 7, 3, true, MixBlocks, 64, 1024)
		},
		func() (*EpochOrder, error) { return orders.Get(parts, 7, 3, true, MixBlocks, 32, 1024) },
	} {
		if o, err := other(); err != nil || o == a {
			t.Errorf("other arguments got the same order (%v)", err)
		}
	}
	if _, err := orders.Get(parts, 7, 3, true, MixBlocks, 0, 1024); err == nil {
		t.Error("invalid sizes were accepted")
	}

	kept := maxKeptChunks
	maxKeptChunks = 0
	dealing, err := NewEpochOrder(parts, 7, 3, true, MixBlocks, 64, 1024)
	maxKeptChunks = kept
	if err != nil {
		t.Fatal(err)
	}
	if a.dealt == nil || dealing.dealt != nil {
		t.Fatalf("kept chunks: %v and %v, want the cached order's only", a.dealt != nil, dealing.dealt != nil)
	}
	for p := range parts {
		for w := range a.PartitionWindows(p) {
			ca, pa := a.Gather(p, w)
			cd, pd := dealing.Gather(p, w)
			if !slices.Equal(ca, cd) || !slices.Equal(pa, pd) {
				t.Fatalf("partition %d window %d gathers differently", p, w)
			}
		}
	}
}
