package planner

import (
	"context"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/exec"
)

// Distributed planning (PhysicalOptions.Nodes > 0) cuts the physical plan into stages at
// exec.Shuffle operators:
//
//   - A scan of a versioned source table (Iceberg, a dataset) is distributed: its tasks are its
//     partitions, each run by the data node the exchange places it on. Filters and projections
//     keep their input's placement.
//   - A grouped aggregation (and DISTINCT) over distributed input runs its partial stage where
//     the input is, shuffles the partial groups by key into one bucket per node, and runs the
//     final stage on each node over its bucket. Without group keys the partials are gathered
//     to wherever the final stage runs.
//   - A hash join of two distributed sides shuffles both by the join keys (cast to the types
//     the join compares in) and joins bucket p with bucket p on node p.
//   - Anything that needs all rows in one place (a sort, a limit, a join or union with a side
//     that is not distributed, a subquery) gathers its distributed input with a keyless
//     Shuffle and runs where the query's final stage runs: on the head.
//
// Scans and shuffles are numbered in planning order, which is deterministic, so every node
// that plans the same query over the same snapshots numbers them alike.

// Distribution is what distributed planning found, beside the operator tree.
type Distribution struct {
	// Scans are the distributed scans, by number; their tasks are placed on data nodes.
	Scans []*exec.Scan
	// Root is the placement of the plan's root when its partitions run on data nodes (the
	// client reads one endpoint per node), or nil when the root runs in one place.
	Root *exec.Placement
	// Shuffles counts the plan's Shuffle operators.
	Shuffles int
}

// PlanDistributed plans q over opts.Nodes data nodes. The returned operator has the
// client-facing schema; when dist.Root is nil it has a single partition. When the query has no
// distributed scan, or reads a table only this process has (a memory or system table, which
// data nodes cannot plan), op is nil: run the query in one process (PlanQuery).
func PlanDistributed(ctx context.Context, q *Query, opts PhysicalOptions) (op exec.Operator, dist Distribution, err error) {
	logical, err := OptimizeContext(ctx, q.Plan)
	if err != nil {
		return nil, Distribution{}, err
	}
	if opts.Nodes >= 2 {
		logical = ReduceGroupedJoinsOnNodes(ctx, logical, opts.Nodes)
	}
	pp := &physicalPlanner{opts: opts, placed: map[exec.Operator]exec.Placement{}, est: newPhysicalEstimator(ctx)}
	op, err = pp.plan(logical)
	if err != nil {
		return nil, Distribution{}, err
	}
	if len(pp.scans) == 0 || pp.local {
		return nil, Distribution{}, nil
	}
	if pl, ok := pp.placed[op]; ok {
		dist.Root = &pl
	} else {
		op = pp.single(op)
	}
	op, err = clientColumns(op, logical.Schema())
	if err != nil {
		return nil, Distribution{}, err
	}
	dist.Scans, dist.Shuffles = pp.scans, pp.shuffles
	return op, dist, nil
}

// distributed reports whether the planner places operators on data nodes.
func (pp *physicalPlanner) distributed() bool {
	return pp.opts.Nodes > 0 && pp.placed != nil && len(pp.outer) == 0 && pp.replicating == 0
}

// placeScan marks a scan of a versioned source table as a distributed scan.
func (pp *physicalPlanner) placeScan(op exec.Operator, scan exec.Operator) exec.Operator {
	s, ok := scan.(*exec.Scan)
	if !ok || pp.placed == nil {
		return op
	}
	if _, versioned := s.Table().(catalog.VersionedTable); !versioned {
		pp.local = true
		return op
	}
	if !pp.distributed() {
		return op
	}
	pp.placed[op] = exec.Placement{Scan: len(pp.scans)}
	pp.scans = append(pp.scans, s)
	return op
}

// inherit gives op the placement of in, for operators that work partition by partition.
func (pp *physicalPlanner) inherit(op, in exec.Operator) exec.Operator {
	if pl, ok := pp.placed[in]; ok {
		pp.placed[op] = pl
	}
	return op
}

// isPlaced reports whether op's partitions run on data nodes.
func (pp *physicalPlanner) isPlaced(op exec.Operator) bool {
	_, ok := pp.placed[op]
	return ok
}

// shuffle moves op's rows into buckets by keys, one per node (with keys), or gathers them all
// into one partition that runs where it is executed (without keys).
//
// Under Analyze both sides are measured: the input, what each node produces for the shuffle,
// and the shuffle, what each node receives.
func (pp *physicalPlanner) shuffle(op exec.Operator, keys []exec.Expr) exec.Operator {
	op = pp.instrument(op)
	s := exec.NewShuffle(pp.shuffles, op, pp.placed[op], keys, pp.opts.Nodes)
	pp.shuffles++
	if len(keys) > 0 {
		pp.placed[s] = exec.Buckets
	}
	return pp.instrument(s)
}

// gather returns op unchanged unless its partitions run on data nodes, in which case it gathers
// them into one partition that runs here.
func (pp *physicalPlanner) gather(op exec.Operator) exec.Operator {
	if !pp.isPlaced(op) {
		return op
	}
	return pp.shuffle(op, nil)
}

func anySubquery(exprs []Expr) bool {
	for _, e := range exprs {
		if HasSubquery(e) {
			return true
		}
	}
	return false
}
