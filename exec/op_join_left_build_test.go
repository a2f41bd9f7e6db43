package exec

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// TestLeftBuildHashJoinKinds runs the semi and anti cases of joinCases through the left-build
// join.
func TestLeftBuildHashJoinKinds(t *testing.T) {
	for _, c := range joinCases {
		if !c.kind.leftOnly() {
			continue
		}
		for _, batchSize := range []int{1, 2, 1024} {
			t.Run(fmt.Sprintf("%s/batch=%d", c.name, batchSize), func(t *testing.T) {
				tc := newTestContext(t, batchSize)
				left := rowsSource(t, tc, joinLeftSchema, joinLeftRows...)
				right := rowsSource(t, tc, joinRightSchema, c.right...)
				var residual Expr
				if c.residual {
					residual = cmpTest("<", intCol(1, "v"), intCol(3, "w"))
				}
				op, err := NewLeftBuildHashJoin(left, right, c.kind, []Expr{intCol(0, "k")}, []Expr{intCol(0, "k")}, residual)
				if err != nil {
					t.Fatal(err)
				}
				if got := collectRows(t, op, tc); !slices.Equal(got, c.want) {
					t.Errorf("got %q, want %q", got, c.want)
				}
			})
		}
	}
}

// TestLeftBuildHashJoinMatchesHashJoin compares the left-build join with the right-build
// HashJoin over random inputs with NULL and duplicate keys, string and multi-column keys,
// residual conditions, several partitions a side and empty sides: every partition must give the
// same rows in the same order, and no memory or reservation may be left behind.
func TestLeftBuildHashJoinMatchesHashJoin(t *testing.T) {
	s := spillTestSchema
	col := func(n string) Expr { return aggCol(s, n) }
	// The residual compares the left id with the right id (column 4 of left ++ right); the second
	// one is NULL whenever the right k is.
	residuals := map[string]Expr{
		"none":    nil,
		"id<r.id": cmpTest("<", col("id"), &aggTestCol{i: 4, name: "r.id", t: opInt64}),
		"id<r.k":  cmpTest("<", col("id"), &aggTestCol{i: 5, name: "r.k", t: opInt64}),
	}
	type keys struct {
		name        string
		left, right []Expr
	}
	keySets := []keys{
		{"k=k", []Expr{col("k")}, []Expr{col("k")}},
		{"k=id", []Expr{col("k")}, []Expr{col("id")}}, // no NULL on the right
		{"s=s", []Expr{col("s")}, []Expr{col("s")}},
		{"s,k=s,k", []Expr{col("s"), col("k")}, []Expr{col("s"), col("k")}},
	}
	sizes := []struct{ left, right int }{{150, 400}, {0, 50}, {40, 0}, {300, 30}}
	seed := int64(0)
	for _, ks := range keySets {
		for _, kind := range []JoinKind{SemiJoin, AntiJoin, NullAwareAntiJoin} {
			for rname, res := range residuals {
				for _, size := range sizes {
					seed++
					name := fmt.Sprintf("%s/%s/residual=%s/%dx%d", ks.name, kind, rname, size.left, size.right)
					t.Run(name, func(t *testing.T) {
						left := spillTestSource(t, size.left, 3, 7, seed)
						right := spillTestSource(t, size.right, 2, 11, seed+1000)
						want, err := NewHashJoin(left, right, kind, ks.left, ks.right, res)
						if err != nil {
							t.Fatal(err)
						}
						got, err := NewLeftBuildHashJoin(left, right, kind, ks.left, ks.right, res)
						if err != nil {
							t.Fatal(err)
						}
						for _, batch := range []int{3, 1024} {
							tcWant, _ := limitedContext(t, batch, 0)
							tcGot, _ := limitedContext(t, batch, 0)
							w, g := partitionRows(t, want, tcWant), partitionRows(t, got, tcGot)
							for p := range w {
								if !slices.Equal(g[p], w[p]) {
									t.Fatalf("batch %d, partition %d: got %d rows, want %d:\n got %.300q\nwant %.300q", batch, p, len(g[p]), len(w[p]), g[p], w[p])
								}
							}
						}
					})
				}
			}
		}
	}
}

// partitionRows executes the partitions of op one after the other with tc and returns each
// one's rows, in order.
func partitionRows(t *testing.T, op Operator, tc *TaskContext) [][]string {
	t.Helper()
	out := make([][]string, op.Partitions())
	for p := range out {
		rdr, err := op.Execute(context.Background(), p, tc)
		if err != nil {
			t.Fatal(err)
		}
		for rdr.Next() {
			out[p] = append(out[p], formatRows(rdr.RecordBatch())...)
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestLeftBuildHashJoinFallsBack: a left side that does not fit in the query's memory makes the
// join fall back to the right-build join (which spills when its right side does not fit
// either): same rows as without a limit, and no memory, reservation or spill file left behind.
// With memory too small for any join it fails with ResourceExhausted, cleanly.
func TestLeftBuildHashJoinFallsBack(t *testing.T) {
	col := func(n string) Expr { return aggCol(spillTestSchema, n) }
	left := spillTestSource(t, 1500, 3, 10, 1)
	for _, kind := range []JoinKind{SemiJoin, AntiJoin, NullAwareAntiJoin} {
		for _, rightRows := range []int{100, 1200} {
			t.Run(fmt.Sprintf("%s/right=%d", kind, rightRows), func(t *testing.T) {
				right := spillTestSource(t, rightRows, 2, 10, 2)
				op, err := NewLeftBuildHashJoin(left, right, kind, []Expr{col("s")}, []Expr{col("s")}, nil)
				if err != nil {
					t.Fatal(err)
				}
				wantSameRowsUnderLimit(t, op, 16, 48<<10, "the left side fit")
				tiny, _ := limitedContext(t, 16, 2<<10)
				_, err = runRows(context.Background(), op, tiny)
				wantExhausted(t, err)
			})
		}
	}
}

// TestLeftBuildHashJoinRejectsOtherKinds: inner and left joins output right columns, which a
// left build cannot produce.
func TestLeftBuildHashJoinRejectsOtherKinds(t *testing.T) {
	tc := newTestContext(t, 4)
	left := rowsSource(t, tc, joinLeftSchema, joinLeftRows...)
	right := rowsSource(t, tc, joinRightSchema, joinRightRows...)
	for _, kind := range []JoinKind{InnerJoin, LeftJoin} {
		if _, err := NewLeftBuildHashJoin(left, right, kind, []Expr{intCol(0, "k")}, []Expr{intCol(0, "k")}, nil); err == nil {
			t.Errorf("%s: accepted", kind)
		}
	}
}
