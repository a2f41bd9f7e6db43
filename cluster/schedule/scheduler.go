package schedule

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

// MaxAttempts bounds the nodes one partition is tried on in one round (Plan) before the round
// gives it up: a partition that fails on three nodes is more likely broken than unlucky.
const MaxAttempts = 3

// Key names one generation of a dataset.
type Key struct {
	Name       string
	Generation uint64
}

func (k Key) String() string { return fmt.Sprintf("%s@%d", k.Name, k.Generation) }

// partState is where a partition stands.
type partState int

const (
	// partWaiting: no node holds the partition and none is making it; the next Plan places it.
	partWaiting partState = iota
	// partMaking: a Make for it is out, its outcome not yet reported.
	partMaking
	// partHeld: a node holds it; reads go there.
	partHeld
	// partLost: the process that held it is gone and nothing can make it again (a Fixed
	// dataset's); the very process coming back holds it again.
	partLost
)

// Make is a decision: make partition Partition of Dataset on Node. Its caller reports the
// outcome with Done or Failed.
type Make struct {
	Dataset   Key
	Partition int
	Node      Node
	// Attempt identifies this decision: the outcome of one that was overtaken (the node was
	// lost meanwhile, the partition was used again where it was, the dataset was removed) is
	// stale and changes nothing.
	Attempt uint64
}

// Verdict is what becomes of a partition whose Make failed.
type Verdict int

const (
	// Stale: the Make no longer counted; nothing to do for it (the next Plan places the
	// partition if it still waits).
	Stale Verdict = iota
	// Retry: try the returned Make, on a node not yet tried.
	Retry
	// GiveUp: the partition waits again; the round failed with the reported error.
	GiveUp
)

// PartRef names one partition of one dataset generation.
type PartRef struct {
	Dataset   Key
	Partition int
}

// Change is what a membership change did to the datasets.
type Change struct {
	// Unowned are the partitions whose holder is gone: until they are made again, reading
	// them fails (retryably).
	Unowned []PartRef
	// Reowned are partitions that a returning process still holds: they are held there
	// again, and nothing is made for them.
	Reowned []Make
	// Rebuild are the datasets with waiting partitions and nobody driving them: the caller
	// drives each (Plan until nothing waits, then Release).
	Rebuild []Key
	// Lost are the partitions of Fixed datasets whose holder is gone: their rows are gone
	// unless that very process comes back (then they are in Reowned).
	Lost []PartRef
}

// Scheduler is the head's dataset registry state: the dataset generations, the owner and state
// of each partition, and the data node processes it has seen come and go. See the package
// comment for what it guarantees.
type Scheduler struct {
	datasets map[Key]*dataset
	// latest is, per node ID, the process last observed (Observe) and its state.
	latest   map[string]Node
	attempts uint64
	lastGen  uint64
}

type dataset struct {
	bytes []int64
	parts []part
	// driving is set while a caller makes the dataset's waiting partitions (from Add, or a
	// Change.Rebuild / Release that returned it, until Release returns false).
	driving bool
	// fixed is set once the dataset's rows have no source to make them from again (Fix).
	fixed bool
}

type part struct {
	state partState
	// node is the holder (partHeld) or the maker (partMaking).
	node    Node
	attempt uint64
	// attempts counts the nodes tried in the current round.
	attempts int
	// tried lists the node IDs that failed to make the partition, or were lost while making
	// it, since it was last held: new attempts prefer other nodes.
	tried []string
	// prev is the process that held the partition when it was lost: if that very process
	// comes back before the partition is made again, it holds it again.
	prev Node
}

// New returns an empty scheduler.
func New() *Scheduler {
	return &Scheduler{datasets: map[Key]*dataset{}, latest: map[string]Node{}}
}

// Add registers a new dataset generation with partitions of the given estimated bytes, all
// waiting, and its caller as their driver (Plan, then Release). The generation is now's
// nanoseconds, made larger than any earlier one, so a name's generations increase.
func (s *Scheduler) Add(name string, now time.Time, partBytes []int64) Key {
	gen := uint64(max(now.UnixNano(), 0))
	if gen <= s.lastGen {
		gen = s.lastGen + 1
	}
	s.lastGen = gen
	k := Key{Name: name, Generation: gen}
	s.datasets[k] = &dataset{bytes: slices.Clone(partBytes), parts: make([]part, len(partBytes)), driving: true}
	return k
}

// Remove forgets a dataset generation (dropped, replaced, or failed to make): outcomes
// reported for it later are stale.
func (s *Scheduler) Remove(k Key) { delete(s.datasets, k) }

// Fix records that nothing can make k's partitions again from now on: its rows came from a
// client (bulk ingest), and the caller no longer has them. A partition whose holder is lost
// after this is lost (Change.Lost), not waiting: it is never placed again, and k is never
// returned to be rebuilt. Its caller fixes k when it ends its drive (Release returned false),
// under the same serialization, so no loss in between makes a partition wait.
func (s *Scheduler) Fix(k Key) {
	if d := s.datasets[k]; d != nil {
		d.fixed = true
	}
}

// Lost returns the partitions of k that are lost (see Fix), in order; nil when none is.
func (s *Scheduler) Lost(k Key) []int {
	d := s.datasets[k]
	if d == nil {
		return nil
	}
	var out []int
	for i, p := range d.parts {
		if p.state == partLost {
			out = append(out, i)
		}
	}
	return out
}

// Owners returns, per partition of k, the node holding it (the zero Node while it is not
// held), or nil when k is not registered.
func (s *Scheduler) Owners(k Key) []Node {
	d := s.datasets[k]
	if d == nil {
		return nil
	}
	out := make([]Node, len(d.parts))
	for i, p := range d.parts {
		if p.state == partHeld {
			out[i] = p.node
		}
	}
	return out
}

// Plan places the waiting partitions of k on nodes (the membership now) and returns a Make for
// each, largest first. A partition goes to the node among the placeable ones (Placeable, less
// any process seen lost or replaced) that holds the fewest bytes of k, then the fewest bytes
// of every dataset, then comes first in nodes; nodes that failed the partition before are
// avoided while others remain. Each call starts a new round of MaxAttempts per partition.
//
// Only k's driver calls Plan, and it has the outcome of every Make of its previous round
// when it does: a Make of k still out then is abandoned (its goroutine died), and its
// partition is placed again.
//
// No Makes and a nil error mean that nothing of k waits (or k is no longer registered). With
// partitions waiting and no node to place them on, the error is errs.Unavailable.
func (s *Scheduler) Plan(k Key, nodes []Node) ([]Make, error) {
	d := s.datasets[k]
	if d == nil {
		return nil, nil
	}
	d.abandonMakes()
	var waiting []int
	for i, p := range d.parts {
		if p.state == partWaiting {
			waiting = append(waiting, i)
		}
	}
	if len(waiting) == 0 {
		return nil, nil
	}
	cands := s.placeable(nodes)
	if len(cands) == 0 {
		return nil, errs.Unavailablef("no data node is alive to hold dataset %q", k.Name)
	}
	slices.SortStableFunc(waiting, func(a, b int) int { return cmp.Compare(d.bytes[b], d.bytes[a]) })
	l := s.loads(k)
	out := make([]Make, 0, len(waiting))
	for _, i := range waiting {
		p := &d.parts[i]
		p.attempts = 0
		untried := without(cands, p.tried)
		if len(untried) == 0 {
			p.tried, untried = nil, cands
		}
		out = append(out, s.assign(k, d, i, l.least(untried), l))
	}
	return out, nil
}

// Done reports that m succeeded: the partition is held by m.Node. It returns false when m was
// stale (see Make.Attempt); then nothing changed.
func (s *Scheduler) Done(m Make) bool {
	p := s.making(m)
	if p == nil {
		return false
	}
	*p = part{state: partHeld, node: m.Node, attempt: p.attempt}
	return true
}

// Failed reports that m failed; nodeFault says whether the node was to blame (it is gone,
// overloaded, out of memory) rather than the partition's query. A node fault moves the
// partition to the least loaded placeable node of nodes that has not failed it (Retry), while
// the round has attempts left; otherwise the partition waits again (GiveUp).
func (s *Scheduler) Failed(m Make, nodeFault bool, nodes []Node) (Make, Verdict) {
	p := s.making(m)
	if p == nil {
		return Make{}, Stale
	}
	if !slices.Contains(p.tried, m.Node.ID) {
		p.tried = append(p.tried, m.Node.ID)
	}
	giveUp := func() (Make, Verdict) {
		p.state, p.node, p.attempts = partWaiting, Node{}, 0
		return Make{}, GiveUp
	}
	if !nodeFault || p.attempts >= MaxAttempts {
		return giveUp()
	}
	untried := without(s.placeable(nodes), p.tried)
	if len(untried) == 0 {
		return giveUp()
	}
	d := s.datasets[m.Dataset]
	l := s.loads(m.Dataset)
	return s.assign(m.Dataset, d, m.Partition, l.least(untried), l), Retry
}

// Release ends the current drive of k (the caller's Plan rounds). It returns true when
// partitions of k wait again (a node was lost meanwhile, or the last round gave up): the
// caller still drives k and must go on. A caller that stops anyway (the head shuts down)
// need not call it.
func (s *Scheduler) Release(k Key) bool {
	d := s.datasets[k]
	if d == nil {
		return false
	}
	d.driving = d.waiting()
	return d.driving
}

// Abandon ends k's drive when its driver fails without finishing (it panicked): its Makes
// still out are forgotten, and the next membership change that finds partitions of k waiting
// asks for a new driver (Change.Rebuild).
func (s *Scheduler) Abandon(k Key) {
	if d := s.datasets[k]; d != nil {
		d.abandonMakes()
		d.driving = false
	}
}

// Observe applies a membership change: n is a node as it is now. It is called for every
// change, in order. Only a loss moves data: when n is lost, or n is another process than one
// seen before under its ID (it restarted), what that earlier process held or was making
// waits to be made again. A suspect node keeps everything, and a recovered one takes new
// work again. When the very process that held partitions before it was lost comes back (same
// ID, address and non-empty boot ID: it never restarted, so it still has them in memory),
// it holds again those of them not yet made elsewhere.
func (s *Scheduler) Observe(n Node) Change {
	s.latest[n.ID] = n
	var ch Change
	for _, k := range slices.SortedFunc(maps.Keys(s.datasets), compareKeys) {
		d := s.datasets[k]
		for i := range d.parts {
			p := &d.parts[i]
			if (p.state == partHeld || p.state == partMaking) && p.node.ID == n.ID && (n.State == Lost || !sameProcess(p.node, n)) {
				switch {
				case p.state == partHeld && d.fixed:
					p.prev = p.node
					ch.Lost = append(ch.Lost, PartRef{k, i})
					p.state, p.node = partLost, Node{}
					continue
				case p.state == partHeld:
					p.prev = p.node
					ch.Unowned = append(ch.Unowned, PartRef{k, i})
				case !slices.Contains(p.tried, n.ID):
					p.tried = append(p.tried, n.ID)
				}
				p.state, p.node = partWaiting, Node{}
			}
			if p.state != partHeld && n.State != Lost && n.BootID != "" && sameProcess(p.prev, n) {
				*p = part{state: partHeld, node: n, attempt: p.attempt}
				ch.Reowned = append(ch.Reowned, Make{Dataset: k, Partition: i, Node: n, Attempt: p.attempt})
			}
		}
		if !d.driving && d.waiting() {
			d.driving = true
			ch.Rebuild = append(ch.Rebuild, k)
		}
	}
	return ch
}

// abandonMakes returns the partitions being made to waiting: their outcomes are stale.
func (d *dataset) abandonMakes() {
	for i := range d.parts {
		if p := &d.parts[i]; p.state == partMaking {
			p.state, p.node = partWaiting, Node{}
		}
	}
}

func (d *dataset) waiting() bool {
	return slices.ContainsFunc(d.parts, func(p part) bool { return p.state == partWaiting })
}

// making returns m's partition when m is its current Make, else nil.
func (s *Scheduler) making(m Make) *part {
	d := s.datasets[m.Dataset]
	if d == nil || m.Partition < 0 || m.Partition >= len(d.parts) {
		return nil
	}
	p := &d.parts[m.Partition]
	if p.state != partMaking || p.attempt != m.Attempt {
		return nil
	}
	return p
}

// assign makes partition i of d (k) a Make on n and counts it in l.
func (s *Scheduler) assign(k Key, d *dataset, i int, n Node, l loads) Make {
	s.attempts++
	p := &d.parts[i]
	p.state, p.node, p.attempt = partMaking, n, s.attempts
	p.attempts++
	l.add(n.ID, weight(d.bytes[i]), true)
	return Make{Dataset: k, Partition: i, Node: n, Attempt: p.attempt}
}

// placeable returns the nodes new partitions may go to: Placeable among those whose process
// was not seen lost or replaced (nodes may be a snapshot taken before the latest change).
func (s *Scheduler) placeable(nodes []Node) []Node {
	var usable []Node
	for _, n := range nodes {
		if seen, ok := s.latest[n.ID]; ok && (!sameProcess(seen, n) || seen.State == Lost) {
			continue
		}
		usable = append(usable, n)
	}
	return Placeable(usable, stateOf)
}

// loads counts the bytes held or being made on each node: of one dataset, and of all.
type loads struct{ own, all map[string]int64 }

func (s *Scheduler) loads(k Key) loads {
	l := loads{own: map[string]int64{}, all: map[string]int64{}}
	for key, d := range s.datasets {
		for i, p := range d.parts {
			if p.state == partHeld || p.state == partMaking {
				l.add(p.node.ID, weight(d.bytes[i]), key == k)
			}
		}
	}
	return l
}

func (l loads) add(id string, bytes int64, own bool) {
	l.all[id] += bytes
	if own {
		l.own[id] += bytes
	}
}

// least returns the node of cands (not empty) with the fewest bytes of the dataset, then of
// all datasets, then the first: partitions of one dataset spread over the nodes (its reads
// run everywhere), and the totals even out across datasets.
func (l loads) least(cands []Node) Node {
	best := cands[0]
	for _, n := range cands[1:] {
		if c := cmp.Compare(l.own[n.ID], l.own[best.ID]); c < 0 || c == 0 && l.all[n.ID] < l.all[best.ID] {
			best = n
		}
	}
	return best
}

// weight counts an empty partition as a byte, so that empty partitions spread too.
func weight(bytes int64) int64 { return max(bytes, 1) }

func without(nodes []Node, ids []string) []Node {
	var out []Node
	for _, n := range nodes {
		if !slices.Contains(ids, n.ID) {
			out = append(out, n)
		}
	}
	return out
}

func compareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Generation, b.Generation))
}
