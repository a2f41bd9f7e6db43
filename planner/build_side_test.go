package planner

import "testing"

// TestBuildLeftFollowsEstimates: a semi, anti or NOT IN join hashes its left side only when that
// side is estimated at most half the right side's rows; other kinds never do.
func TestBuildLeftFollowsEstimates(t *testing.T) {
	values := func(n int) Plan { return &Values{Rows: make([][]Expr, n)} }
	cases := []struct {
		kind        JoinKind
		left, right int
		want        bool
	}{
		{SemiJoin, 10, 1000, true},
		{AntiJoin, 10, 1000, true},
		{NullAwareAntiJoin, 10, 1000, true},
		{SemiJoin, 500, 1000, true},
		{SemiJoin, 501, 1000, false},
		{AntiJoin, 1000, 10, false},
		{InnerJoin, 10, 1000, false},
		{LeftJoin, 10, 1000, false},
	}
	for _, c := range cases {
		pp := &physicalPlanner{}
		j := &Join{Left: values(c.left), Right: values(c.right), Kind: c.kind}
		if got := pp.buildLeft(j); got != c.want {
			t.Errorf("%s join of %d and %d rows: build left %v, want %v", c.kind, c.left, c.right, got, c.want)
		}
	}
}
