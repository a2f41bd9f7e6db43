package planner

import (
	"github.com/cachedb/cachedb/exec"
)

// Replicated build sides. A hash join of two distributed sides shuffles both by the join keys
// (partitionedJoin): every row of each side crosses to the node of its key. When the right side
// is small and cheap to compute — TPC-H's dimension tables, a filtered part or orders table
// joined with lineitem — every data node instead computes the whole right side itself, reading
// its scans from storage, and joins its own partitions of the left side with it: the left side
// stays where it is and nothing is shuffled. Each node then reads the right side's tables in
// full, which costs (nodes-1) times their rows more reading than placing their tasks once; the
// shuffle it avoids moves every row of both sides. So the right side is replicated when
//
//   - its estimated output is at most replicateMaxRows (every node holds it as a hash table),
//     or replicateDatasetMaxRows when the left side reads dataset partitions: a process holding
//     datasets spends its memory on them, and a replicated side costs every node the whole
//     hash table where a shuffle costs each node its share; one that does not fit what the
//     datasets leave spills on every node (a grace join per node instead of one split among
//     them), far slower than the shuffle it avoids,
//   - the rows its scans read, times nodes-1, are at most the rows the shuffle would move (the
//     left side's and the right side's estimated output),
//   - the join keeps left rows by the right side alone: an inner, left, semi or anti join (a NOT
//     IN join is not partitioned either way) with equality keys and no subquery in its condition,
//   - and its scans read source tables any node can read (not dataset partitions held by one
//     node; see planReplicated).
//
// The join joins partition p of the left side with a whole copy of the right side
// (exec.NewReplicatedHashJoin: each node builds the right side once and shares it among the
// left partitions it runs) and keeps the left side's placement.

// replicateMaxRows bounds the estimated rows of a replicated right side; with a left side that
// reads dataset partitions, replicateDatasetMaxRows does (about a megabyte of hash table).
const (
	replicateMaxRows        = 1 << 18
	replicateDatasetMaxRows = 1 << 14
)

// replicateRight reports whether the right side of j, a join of a distributed left side over
// nodes data nodes, should be computed by every node (see above), when its estimated rows may
// be up to maxRows.
func replicateRight(est *estimator, j *Join, nodes int, maxRows float64) bool {
	switch j.Kind {
	case InnerJoin, LeftJoin, SemiJoin, AntiJoin:
	default:
		return false
	}
	if nodes < 2 || j.On == nil || HasSubquery(j.On) {
		return false
	}
	right := est.estimate(j.Right).rows
	if right > maxRows {
		return false
	}
	scanned, ok := scannedRows(est, j.Right)
	return ok && float64(nodes-1)*scanned <= est.estimate(j.Left).rows+right
}

// scannedRows sums the rows the scans of p read (their tables' rows, before filters); false when
// p holds something other than scans, filters, projections, joins and aggregates of them.
func scannedRows(est *estimator, p Plan) (float64, bool) {
	switch n := p.(type) {
	case *Scan:
		return est.scanEstimate(n).rows, true
	case *Filter, *Project, *Join, *Aggregate, *Distinct:
		total := 0.0
		for _, k := range p.Children() {
			rows, ok := scannedRows(est, k)
			if !ok {
				return 0, false
			}
			total += rows
		}
		return total, true
	}
	return 0, false
}

// planReplicated plans p for every data node to compute whole: its scans are not placed (each
// node plans and reads all their tasks), so nothing in it is shuffled. It returns nil when p
// reads tasks held by one node (dataset partitions), which the others cannot read locally; p
// is then to be planned as usual.
func (pp *physicalPlanner) planReplicated(p Plan) (exec.Operator, error) {
	pp.replicating++
	op, err := pp.plan(p)
	pp.replicating--
	if err != nil || op == nil {
		return nil, err
	}
	if located(op) {
		return nil, nil
	}
	return op, nil
}

// located reports whether a scan under op reads a task held by one data node. Every process
// planning op answers alike (exec.Scan.Located), as the plans of one execution must agree:
// whether or not it instruments its operators (EXPLAIN ANALYZE's stages are instrumented on the
// data nodes, where exec.Analyzed hides the scan it wraps from a type check).
func located(op exec.Operator) bool {
	if a, ok := op.(*exec.Analyzed); ok {
		op = a.Unwrap()
	}
	if s, ok := op.(*exec.Scan); ok && s.Located() {
		return true
	}
	for _, k := range op.Children() {
		if located(k) {
			return true
		}
	}
	return false
}
