package schedule

// State is a data node's membership state (the values of cluster.State).
type State string

const (
	// Alive: heard from recently; new work goes to it.
	Alive State = "alive"
	// Suspect: late; it takes no new work (unless no node is alive) and keeps what it holds.
	Suspect State = "suspect"
	// Lost: gone; what its process held is made again elsewhere.
	Lost State = "lost"
)

// Node is one data node process as the scheduler sees it.
type Node struct {
	ID   string
	Addr string
	// BootID names the node's process; "" when the node sent none (then a process cannot be
	// told from the next one at the same address, and nothing is used again after a loss).
	BootID string
	State  State
}

// sameProcess reports whether a and b name the same process of the same node.
func sameProcess(a, b Node) bool {
	return a.ID == b.ID && a.Addr == b.Addr && a.BootID == b.BootID
}

// Placeable returns the nodes new work (scan tasks, dataset partitions) may be placed on, in
// their order: the alive ones, or, only when none is alive, the suspect ones: work placed on a
// slow node beats work refused. state reads a node's state.
func Placeable[N any](nodes []N, state func(N) State) []N {
	var alive, suspect []N
	for _, n := range nodes {
		switch state(n) {
		case Alive:
			alive = append(alive, n)
		case Suspect:
			suspect = append(suspect, n)
		}
	}
	if len(alive) == 0 {
		return suspect
	}
	return alive
}

func stateOf(n Node) State { return n.State }
