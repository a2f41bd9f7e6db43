package schedule

import "github.com/cachedb/cachedb/exec"

// DefaultPartitionsPerNode is how many partitions a dataset gets per alive data node when its
// definition does not say: several per node, so that the partitions of a lost node spread over
// all survivors instead of doubling the load of one.
const DefaultPartitionsPerNode = 4

// Group is one partition of a dataset: the scan tasks of the source query it holds.
type Group struct {
	// Tasks are task indexes, ascending.
	Tasks []int
	// Bytes is what the tasks read together: what the partition weighs when it is placed.
	Bytes int64
}

// GroupTasks divides a query's scan tasks (their estimated bytes) into a dataset's partitions
// of nearly equal bytes (exec.AssignShares, a pure function of the sizes and the count).
// partitions is the count asked for; 0 or less asks for DefaultPartitionsPerNode per alive
// node (at least one node counted). There are never more partitions than tasks, and always at
// least one (with no tasks, it holds none).
func GroupTasks(taskBytes []int64, partitions, aliveNodes int) []Group {
	n := partitions
	if n <= 0 {
		n = DefaultPartitionsPerNode * max(aliveNodes, 1)
	}
	n = max(min(n, len(taskBytes)), 1)
	out := make([]Group, 0, n)
	for _, tasks := range exec.AssignShares(taskBytes, n) {
		g := Group{Tasks: tasks}
		for _, t := range tasks {
			g.Bytes += taskBytes[t]
		}
		out = append(out, g)
	}
	return out
}
