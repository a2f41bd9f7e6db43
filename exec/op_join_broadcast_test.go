package exec

import (
	"context"
	"slices"
	"testing"
)

// A broadcast hash join run for only some of its partitions (a data node's share) gives those
// partitions' rows, builds once, and holds nothing once the execution's cache is released,
// where a build shared until every partition claims it would stay held.
func TestBroadcastHashJoinReleasesWithTheExecution(t *testing.T) {
	col := func(n string) Expr { return aggCol(spillTestSchema, n) }
	left := spillTestSource(t, 300, 3, 7, 1)
	right := spillTestSource(t, 100, 2, 11, 2)
	keys := []Expr{col("k")}
	want, err := NewHashJoin(left, right, InnerJoin, keys, keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewBroadcastHashJoin(left, right, InnerJoin, keys, keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	tcWant, _ := limitedContext(t, 1024, 0)
	w := partitionRows(t, want, tcWant)
	tc, pool := limitedContext(t, 1024, 0)
	tc.Cache = NewQueryCache()
	for _, p := range []int{2, 1} {
		rdr, err := got.Execute(context.Background(), p, tc)
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for rdr.Next() {
			rows = append(rows, formatRows(rdr.RecordBatch())...)
		}
		rdr.Release()
		// The build reads the right side's partitions concurrently, so rows matching one key
		// may come in another order: compare the partition's rows as a multiset.
		want := slices.Clone(w[p])
		slices.Sort(rows)
		slices.Sort(want)
		if !slices.Equal(rows, want) {
			tc.Cache.Release()
			t.Fatalf("partition %d: got %d rows, want %d (or other rows)", p, len(rows), len(want))
		}
	}
	if pool.Stats().Reserved == 0 {
		t.Fatal("the build is not held while the execution runs")
	}
	tc.Cache.Release() // limitedContext's cleanup asserts nothing is left
}
