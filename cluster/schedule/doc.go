// Package schedule makes every placement decision of the head: which data node runs each task
// of a distributed scan, how a dataset's scan tasks group into partitions, which node makes
// each partition (and which one next when a node fails), and which partitions are made again,
// or used again, when the membership changes.
//
// It is pure: no network, no goroutines, no locks, no clock reads (the caller passes the time
// in). Decisions come out as plain values (a Make: "make partition p of dataset d@g on node
// n"); the network layer (cluster.Datasets, flightsql) carries them out and reports each
// outcome back (Done, Failed). So every decision is tested here without a node, and the
// network layer only moves bytes. A Scheduler is not safe for concurrent use: its caller
// serializes the calls (cluster.Datasets holds its mutex around them).
package schedule
