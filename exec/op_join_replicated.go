package exec

// NewReplicatedHashJoin returns a hash join of a distributed left side, whose partitions run
// where placed says, with a right side every data node computes whole (its scans read all their
// tasks wherever it runs): each node joins the left partitions it runs with its own copy of the
// right side, and nothing is shuffled (planner/replicate.go).
//
// A node builds the right side once per execution and shares it among the left partitions it
// runs (placed.Owned; without a data node exchange, every partition); the build is released
// when the last of them releases its reader, or when the execution's cache is released (a
// canceled or abandoned execution), whichever comes later for the readers still holding it.
func NewReplicatedHashJoin(left, right Operator, placed Placement, kind JoinKind, leftKeys, rightKeys []Expr, residual Expr) (Operator, error) {
	op, err := NewHashJoin(left, right, kind, leftKeys, rightKeys, residual)
	if err != nil {
		return nil, err
	}
	j := op.(*HashJoin)
	j.replicated = &placed
	j.builds.endWithExecution = true
	return j, nil
}

// nodeShared reports whether the partitions sharing a build are those a data node runs of a
// replicated join. Each such partition is read by a consumer of its own (a shuffle's producer),
// so when the build spilled they may take turns loading its partition pairs (graceBuild.turn):
// one partition waiting for another's turn never waits for itself.
func (j *HashJoin) nodeShared(tc *TaskContext) bool {
	return j.replicated != nil && tc.Exchange != nil && tc.Exchange.Self() >= 0
}

// sharers is how many Execute calls with tc share one build: every partition, or for a
// replicated join run by a data node, the partitions that node runs.
func (j *HashJoin) sharers(tc *TaskContext) (int, error) {
	if !j.nodeShared(tc) {
		return j.Partitions(), nil
	}
	owned, err := j.replicated.Owned(tc.Exchange, j.Partitions())
	if err != nil {
		return 0, err
	}
	return len(owned), nil
}
