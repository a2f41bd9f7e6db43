package schedule

import (
	"slices"

	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
)

// Scan is one distributed scan of a query as placement sees it: its tasks, numbered alike on
// every node (engine.Division).
type Scan struct {
	// Bytes[t] estimates what task t reads; there are len(Bytes) tasks.
	Bytes []int64
	// Locations[t] is the address of the node that holds task t's rows (a dataset partition),
	// or "" (or missing) when any node can read the task (an Iceberg file scan task).
	Locations []string
}

func (s Scan) location(task int) string {
	if task < len(s.Locations) {
		return s.Locations[task]
	}
	return ""
}

// ScanHolders returns the addresses among reachable, outside placeable, of the nodes that hold
// tasks of scans, in the order first met. They take no new work (they are suspect) but still
// serve what they hold, so a query reading their data runs on placeable followed by them.
func ScanHolders(scans []Scan, placeable, reachable []string) []string {
	var out []string
	for _, scan := range scans {
		for _, loc := range scan.Locations {
			if loc == "" || slices.Contains(placeable, loc) || slices.Contains(out, loc) {
				continue
			}
			if slices.Contains(reachable, loc) {
				out = append(out, loc)
			}
		}
	}
	return out
}

// PlaceScans places the tasks of a distributed query's scans on nodes (addresses; the first
// placeable of them take new work, the others only serve what they hold): owners[k][t] is the
// index in nodes of the node that runs task t of scan k. A located task runs on its node; the
// others are spread by bytes over the placeable nodes (exec.AssignShares: largest first, each
// to the least loaded). The owners travel in the query's tickets.
//
// With no nodes at all, ok is false and the query runs on the head alone, unless it reads
// data only nodes hold: then the error is errs.Unavailable. A task located at a node not in
// nodes is an errs.Unavailable error too: that node was lost, and its partitions are being
// made again elsewhere, so a retry succeeds.
func PlaceScans(scans []Scan, nodes []string, placeable int) (owners [][]int, ok bool, err error) {
	if len(nodes) == 0 {
		for _, scan := range scans {
			if slices.ContainsFunc(scan.Locations, func(l string) bool { return l != "" }) {
				return nil, false, errs.Unavailablef("no data node is alive to read this query's data")
			}
		}
		return nil, false, nil
	}
	for _, scan := range scans {
		o, err := scanOwners(scan, nodes, placeable)
		if err != nil {
			return nil, false, err
		}
		owners = append(owners, o)
	}
	return owners, true, nil
}

// scanOwners places one scan's tasks (PlaceScans).
func scanOwners(scan Scan, nodes []string, placeable int) ([]int, error) {
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		index[n] = i
	}
	owners := make([]int, len(scan.Bytes))
	var free []int
	for task := range owners {
		loc := scan.location(task)
		if loc == "" {
			free = append(free, task)
			continue
		}
		i, held := index[loc]
		if !held {
			return nil, errs.Unavailablef("part of this query's data is on data node %s, which was lost; its partitions are being rebuilt, try again shortly", loc)
		}
		owners[task] = i
	}
	if len(free) == 0 {
		return owners, nil
	}
	if placeable <= 0 {
		return nil, errs.Unavailablef("no data node is alive to read this query's tables")
	}
	sizes := make([]int64, len(free))
	for i, task := range free {
		sizes[i] = scan.Bytes[task]
	}
	for node, members := range exec.AssignShares(sizes, min(placeable, len(nodes))) {
		for _, m := range members {
			owners[free[m]] = node
		}
	}
	return owners, nil
}
