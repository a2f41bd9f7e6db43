package planner

import (
	"context"
	"testing"
)

// TestReplicateRightFollowsEstimates: a join's right side is replicated only when it is small,
// its inputs are cheap enough to read on every node, and the join kind allows it.
func TestReplicateRightFollowsEstimates(t *testing.T) {
	values := func(n int) Plan { return &Values{Rows: make([][]Expr, n)} }
	on := &Literal{}
	cases := []struct {
		name        string
		kind        JoinKind
		left, right int
		nodes       int
		right2      Plan // when set, the right side instead of values(right)
		want        bool
	}{
		{"values, not scans", InnerJoin, 100000, 1000, 2, nil, false},
		{"one node", InnerJoin, 100000, 1000, 1, nil, false},
		{"not in", NullAwareAntiJoin, 100000, 1000, 2, nil, false},
	}
	est := newPhysicalEstimator(context.Background())
	for _, c := range cases {
		right := c.right2
		if right == nil {
			right = values(c.right)
		}
		j := &Join{Left: values(c.left), Right: right, Kind: c.kind, On: on}
		if got := replicateRight(est, j, c.nodes, replicateMaxRows); got != c.want {
			t.Errorf("%s: replicate %v, want %v", c.name, got, c.want)
		}
	}
}
