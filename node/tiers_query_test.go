package node

import (
	"sync"
	"testing"

	"github.com/cachedb/cachedb/internal/mempool"
)

// Partitions that fill the memory limit give way to a query's operators: the pool asks the
// tiers, which move partitions to disk. Operators that ask at the same time (the partitions of
// one aggregate) all get memory: one asking while another's move is under way waits for it
// instead of being refused.
func TestOperatorsGetMemoryFromPartitionsMovedToDisk(t *testing.T) {
	for round := range 30 {
		s, clock := newTestTiers(t, 2*8320, 0)
		for _, name := range []string{"a", "b"} {
			if _, err := holdTest(t, s, clock, name, 1024, 1, false); err != nil { // 8,320 bytes held
				t.Fatal(err)
			}
		}
		if st := s.pool.Stats(); st.Reserved != st.Limit {
			t.Fatalf("the partitions do not fill memory: %+v", st)
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				r := s.pool.Reserve(mempool.Consumer{Name: "hash aggregate", Spillable: i%2 == 0})
				errs[i] = r.TryGrow(96)
				r.Free()
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: operator %d refused: %v", round, i, err)
			}
		}
	}
}
