package planner

import "context"

// Build-side choice for semi and anti hash joins. A hash join hashes its right side and streams
// its left one through it. For a semi or anti join the right side is the subquery, which can be
// far larger than the rows it filters (TPC-H Q22: a few thousand customers tested against every
// order); the left-build join (exec.LeftBuildHashJoin) hashes the left rows instead and streams
// the subquery through them once. It is chosen when the cardinality estimates put the left side
// at most leftBuildRatio times the right side's rows. Estimates only pick the operator; both
// give the same rows in the same order.
//
// A left side that turns out not to fit in the query's memory makes the left-build join fall
// back to the right-build one (executing the left side again); the margin keeps the choice to
// sides that are clearly the smaller, so that a wrong guess is rare.

// leftBuildRatio is how much smaller than the right side the left side must be estimated.
const leftBuildRatio = 0.5

// buildLeft reports whether the hash join of j (a semi, anti or NOT IN join with equality keys,
// planned in one place) should hash its left side.
func (pp *physicalPlanner) buildLeft(j *Join) bool {
	switch j.Kind {
	case SemiJoin, AntiJoin, NullAwareAntiJoin:
	default:
		return false
	}
	l, r := pp.estimator().estimate(j.Left).rows, pp.estimator().estimate(j.Right).rows
	return l <= leftBuildRatio*r
}

// estimator is the planner's estimator, made on first use.
func (pp *physicalPlanner) estimator() *estimator {
	if pp.est == nil {
		pp.est = newPhysicalEstimator(context.Background())
	}
	return pp.est
}

// newPhysicalEstimator returns an estimator that remembers every node's estimate: physical
// planning estimates the sides of each semi and anti join, nested ones included.
func newPhysicalEstimator(ctx context.Context) *estimator {
	e := newEstimator(ctx)
	e.memo = map[Plan]relEst{}
	return e
}
