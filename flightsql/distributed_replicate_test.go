package flightsql

import (
	"slices"
	"strings"
	"testing"
)

// TestDistributedJoinsReplicateSmallSides: over two data nodes, a join of the rides with a
// filtered few of them computes the small side on every node and joins each node's own rides
// with it (a replicated hash join: one build of the small side per node, shared by the node's
// partitions of the big one, with no shuffle of either side; see planner/replicate.go), and
// answers as a server alone does, for inner, left, semi and anti joins.
func TestDistributedJoinsReplicateSmallSides(t *testing.T) {
	head, alone, _ := startLakeClusterOf(t, 2)
	headConn, aloneConn := head.sessionConn(t), alone.sessionConn(t)
	const inner = "SELECT a.city, count(*), sum(b.fare) FROM demo.rides a JOIN (SELECT ride_id, fare FROM demo.rides WHERE ride_id < 3000) b ON a.ride_id = b.ride_id + 1 GROUP BY a.city"
	_, rows := adbcQuery(t, headConn, "EXPLAIN "+inner)
	plan := strings.Join(rows, "\n")
	if !strings.Contains(plan, "ReplicatedHashJoin") || !strings.Contains(plan, "2 data nodes, 1 distributed scan, 1 shuffle;") {
		t.Errorf("the join of the rides with a few of them is not planned with the few replicated (one distributed scan, the big side's, and one shuffle, the aggregate's):\n%s", plan)
	}
	for _, query := range []string{
		inner,
		"SELECT a.city, count(*), count(b.ride_id) FROM demo.rides a LEFT JOIN (SELECT ride_id FROM demo.rides WHERE ride_id < 3000) b ON a.ride_id = b.ride_id GROUP BY a.city",
		"SELECT city, count(*) FROM demo.rides WHERE ride_id IN (SELECT ride_id + 5 FROM demo.rides WHERE ride_id < 3000) GROUP BY city",
		"SELECT city, count(*) FROM demo.rides a WHERE NOT EXISTS (SELECT 1 FROM demo.rides b WHERE b.ride_id < 3000 AND b.ride_id = a.ride_id) GROUP BY city",
	} {
		t.Run(query, func(t *testing.T) {
			_, got := adbcQuery(t, headConn, query)
			_, want := adbcQuery(t, aloneConn, query)
			slices.Sort(got)
			slices.Sort(want)
			if len(want) == 0 {
				t.Fatal("the reference answer is empty: the query tests nothing")
			}
			if !slices.Equal(got, want) {
				t.Errorf("distributed answer %.300v, want %.300v", got, want)
			}
		})
	}
}
