package planner

import (
	"context"

	"github.com/cachedb/cachedb/exec"
)

// Broadcast joins. An equi-join of two sides placed on data nodes shuffles both by the join
// keys (partitionedJoin), which moves most rows of the large side between nodes. When the
// right (build) side is estimated small, it is instead broadcast: every node receives all its
// rows (exec.NewBroadcast) and joins them with the left side's partitions where they already
// run, so the large side does not move. TPC-H joins lineitem, orders and partsupp with
// supplier, nation, region and filtered part this way.
//
// A broadcast is chosen when the right side has at most maxBroadcastRows rows and no more than
// the left side divided by the node count (the rows a broadcast moves, right × nodes, are then
// at most those a shuffle would move), for the join kinds where each left row needs to see the
// whole right side and nothing else: inner, left, semi and anti joins. (A null-aware anti join
// stays partitioned as before; right and full joins would emit unmatched right rows once per
// node.) With one node nothing moves between nodes, and the join stays partitioned. The
// estimates are the head's everywhere (datasets plan with its row counts), so every
// node makes the same choice.

// maxBroadcastRows bounds the rows a broadcast copies to every node (its hash table is built
// on each).
const maxBroadcastRows = 1_000_000

// broadcastRight reports whether the right side of j is to be broadcast.
func (pp *physicalPlanner) broadcastRight(j *Join) bool {
	switch j.Kind {
	case InnerJoin, LeftJoin, SemiJoin, AntiJoin:
	default:
		return false
	}
	if pp.opts.Nodes < 2 {
		return false // one node moves no rows between nodes either way
	}
	if pp.est == nil {
		pp.est = newPhysicalEstimator(context.Background())
	}
	l, r := pp.est.estimate(j.Left).rows, pp.est.estimate(j.Right).rows
	return r <= maxBroadcastRows && r*float64(max(pp.opts.Nodes, 1)) <= l
}

// broadcastJoin joins left, where its partitions run, with all of right on every node.
func (pp *physicalPlanner) broadcastJoin(left, right exec.Operator, kind exec.JoinKind, lkeys, rkeys []Expr, residual Expr, ls, rs Schema) (exec.Operator, error) {
	lk, rk, res, err := pp.joinExprs(lkeys, rkeys, residual, ls, rs)
	if err != nil {
		return nil, err
	}
	right = pp.instrument(right)
	b := pp.instrument(exec.NewBroadcast(pp.shuffles, right, pp.placed[right], pp.placed[left], pp.opts.Nodes))
	pp.shuffles++
	op, err := exec.NewBroadcastHashJoin(left, b, kind, lk, rk, res)
	if err != nil {
		return nil, err
	}
	return pp.inherit(op, left), nil
}
