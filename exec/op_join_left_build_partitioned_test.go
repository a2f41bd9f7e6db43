package exec

import (
	"fmt"
	"slices"
	"testing"
)

// The partition-wise left-build join gives, partition by partition, what the partitioned
// right-build join gives: partition p of left joined with partition p of right only.
func TestPartitionedLeftBuildJoinMatchesPartitionedHashJoin(t *testing.T) {
	col := func(n string) Expr { return aggCol(spillTestSchema, n) }
	residual := cmpTest("<", col("id"), &aggTestCol{i: 4, name: "r.id", t: opInt64})
	seed := int64(50)
	for _, kind := range []JoinKind{SemiJoin, AntiJoin} {
		for _, res := range []Expr{nil, residual} {
			for _, size := range []struct{ left, right int }{{150, 400}, {0, 50}, {40, 0}} {
				seed++
				t.Run(fmt.Sprintf("%s/residual=%v/%dx%d", kind, res != nil, size.left, size.right), func(t *testing.T) {
					left := spillTestSource(t, size.left, 3, 7, seed)
					right := spillTestSource(t, size.right, 3, 11, seed+1000)
					keys := []Expr{col("k")}
					want, err := NewPartitionedHashJoin(left, right, kind, keys, keys, res)
					if err != nil {
						t.Fatal(err)
					}
					got, err := NewPartitionedLeftBuildJoin(left, right, kind, keys, keys, res)
					if err != nil {
						t.Fatal(err)
					}
					if got.Partitions() != 3 {
						t.Fatalf("%d partitions, want 3", got.Partitions())
					}
					tcWant, _ := limitedContext(t, 1024, 0)
					tcGot, _ := limitedContext(t, 1024, 0)
					w, g := partitionRows(t, want, tcWant), partitionRows(t, got, tcGot)
					for p := range w {
						if !slices.Equal(g[p], w[p]) {
							t.Fatalf("partition %d: got %d rows, want %d:\n got %.300q\nwant %.300q", p, len(g[p]), len(w[p]), g[p], w[p])
						}
					}
				})
			}
		}
	}
}
