package exec

import (
	"context"
	"fmt"
	"testing"
)

// TestHashJoinSpills runs hash joins of every kind whose right side does not fit under the
// limit (a grace join: both sides partitioned to disk) and checks they return the rows of the
// unlimited join, with NULL keys, duplicate keys, string keys and a residual condition.
func TestHashJoinSpills(t *testing.T) {
	s := spillTestSchema
	col := func(n string) Expr { return aggCol(s, n) }
	// The residual compares the left id with the right id (column 4 of left ++ right).
	residual := cmpTest("<", col("id"), &aggTestCol{i: 4, name: "r.id", t: opInt64})
	type keys struct {
		name        string
		left, right []Expr
	}
	keySets := []keys{
		{"s=s", []Expr{col("s")}, []Expr{col("s")}},
		{"k=id", []Expr{col("k")}, []Expr{col("id")}},
		{"s,k=s,k", []Expr{col("s"), col("k")}, []Expr{col("s"), col("k")}},
	}
	kinds := []JoinKind{InnerJoin, LeftJoin, SemiJoin, AntiJoin, NullAwareAntiJoin}
	seed := int64(0)
	for _, ks := range keySets {
		for _, kind := range kinds {
			for _, res := range []Expr{nil, residual} {
				seed++ // a different input for every case
				name := fmt.Sprintf("%s/%s/residual=%v", ks.name, kind, res != nil)
				t.Run(name, func(t *testing.T) {
					left := spillTestSource(t, 200, 3, 10, seed)
					right := spillTestSource(t, 600, 2, 10, seed+100)
					op, err := NewHashJoin(left, right, kind, ks.left, ks.right, res)
					if err != nil {
						t.Fatal(err)
					}
					wantSameRowsUnderLimit(t, op, 16, 32<<10, "the build side fit")
				})
			}
		}
	}
}

// TestPartitionedHashJoinSpills: a partitioned join (one partition a side) spills its
// partition's build side alike.
func TestPartitionedHashJoinSpills(t *testing.T) {
	col := func(n string) Expr { return aggCol(spillTestSchema, n) }
	for _, kind := range []JoinKind{InnerJoin, LeftJoin, AntiJoin} {
		t.Run(kind.String(), func(t *testing.T) {
			left := spillTestSource(t, 600, 1, 10, 5)
			right := spillTestSource(t, 1500, 1, 10, 6)
			op, err := NewPartitionedHashJoin(left, right, kind, []Expr{col("s")}, []Expr{col("s")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			wantSameRowsUnderLimit(t, op, 16, 48<<10, "the build side fit")
		})
	}
}

// TestJoinMemoryTooSmall: when even one partition of the right side does not fit, a hash join
// fails with ResourceExhausted, and a nested-loop join (which does not spill) fails as soon as
// its right side does not fit; both leave nothing behind.
func TestJoinMemoryTooSmall(t *testing.T) {
	col := func(n string) Expr { return aggCol(spillTestSchema, n) }
	left := spillTestSource(t, 300, 2, 10, 1)
	right := spillTestSource(t, 1500, 2, 10, 2)
	hash, err := NewHashJoin(left, right, LeftJoin, []Expr{col("k")}, []Expr{col("k")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	nested, err := NewNestedLoopJoin(left, right, InnerJoin, cmpTest("=", col("k"), &aggTestCol{i: 5, name: "r.k", t: opInt64}))
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []Operator{hash, nested} {
		t.Run(op.String(), func(t *testing.T) {
			tc, _ := limitedContext(t, 16, 2<<10)
			_, err := runRows(context.Background(), op, tc)
			wantExhausted(t, err)
		})
	}
}

// TestHashJoinCanceledWhileSpilling cancels a grace join while it partitions its left side.
func TestHashJoinCanceledWhileSpilling(t *testing.T) {
	col := func(n string) Expr { return aggCol(spillTestSchema, n) }
	left := spillTestSource(t, 600, 2, 10, 1)
	right := spillTestSource(t, 1500, 2, 10, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := int64(20)
	op, err := NewHashJoin(cancelAfter{Operator: left, n: &n, cancel: cancel}, right, InnerJoin, []Expr{col("s")}, []Expr{col("s")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc, pool := limitedContext(t, 16, 64<<10)
	_, err = runRows(ctx, op, tc)
	wantCanceled(t, err)
	if pool.Stats().Refusals == 0 {
		t.Fatal("the build side fit: nothing spilled")
	}
}
