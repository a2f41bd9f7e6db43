package cluster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cachedb/cachedb/cluster/schedule"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/metrics"
	"github.com/cachedb/cachedb/internal/safe"
)

// Defaults for Config fields left zero. The timeouts are long enough to survive a node whose
// process is starved of CPU (a throttled Kubernetes pod, a saturated machine): a node that is
// late is only suspect, and only a node silent for a minute, or known to be gone, loses its
// data. Kubernetes waits 40 s before it calls a node gone, Spark 120 s.
const (
	DefaultHeartbeatInterval = time.Second
	DefaultSuspectAfter      = 5 * time.Second
	DefaultLostAfter         = 60 * time.Second
)

// maxIDLen bounds node IDs, boot IDs and addresses, which are echoed into logs and system.nodes.
const maxIDLen = 256

// State is a node's membership state as the head sees it.
type State string

const (
	// StateAlive: the node's last heartbeat is at most SuspectAfter old. New work (scan
	// tasks, new dataset partitions) is placed on it.
	StateAlive State = "alive"
	// StateSuspect: the node has been silent for more than SuspectAfter, but not LostAfter. No
	// new work is placed on it and nothing it holds is rebuilt; reads of its partitions still
	// go to it. A heartbeat or a registration of the same process makes it alive again.
	StateSuspect State = "suspect"
	// StateLost: the node has been silent for more than LostAfter, registered again as a new
	// process (another boot ID), or refused connections while suspect. Its partitions are
	// rebuilt elsewhere. It stays listed until it registers again.
	StateLost State = "lost"
)

// Node is one data node as the head last saw it.
type Node struct {
	ID   string
	Addr string
	// BootID names the node's process: it is drawn at random when the process starts, so a
	// new boot ID under a known node ID means the node restarted and holds nothing. Empty when
	// the node did not send one (then every registration counts as a restart).
	BootID string
	State  State
	// RegisteredAt is when the head first heard of this process (its current boot ID).
	RegisteredAt time.Time
	// LastHeartbeat is the last time the node was heard from (registration counts).
	LastHeartbeat time.Time
}

// EventKind says what changed.
type EventKind string

const (
	// EventJoined: a process registered that the head holds no data of: a new node, a new
	// process under a known ID (after EventLost of the old one), or a lost node registering
	// again. Only a lost node that is the same process (same boot ID and address) holds again
	// those of its partitions not yet made elsewhere; nothing else it held is used again.
	EventJoined EventKind = "joined"
	// EventSuspect: an alive node missed heartbeats for longer than SuspectAfter. Nothing
	// moves; new work avoids it.
	EventSuspect EventKind = "suspect"
	// EventRecovered: a suspect node was heard from again (heartbeat, or registration of the
	// same process). It keeps its partitions and takes new work again.
	EventRecovered EventKind = "recovered"
	// EventLost: the node is gone (see StateLost): its partitions must be rebuilt elsewhere.
	EventLost EventKind = "lost"
)

// Event reports one membership change with the node as it is after the change.
type Event struct {
	Kind EventKind
	Node Node
	// Reason says why, for logs ("silent for 1m0s", "restarted: new boot ID", ...).
	Reason string
}

// MovesData reports whether the event makes the head rebuild partitions: only a loss does.
func (e Event) MovesData() bool { return e.Kind == EventLost }

// ProbeResult is what the head learns by connecting to a node's address.
type ProbeResult int

const (
	// ProbeUnknown: no answer in time, or an error that says nothing definite (a timeout
	// on a busy machine, a network hiccup).
	ProbeUnknown ProbeResult = iota
	// ProbeReachable: a connection was accepted.
	ProbeReachable
	// ProbeRefused: the address actively refused the connection: no process listens there.
	ProbeRefused
)

// Config configures a Membership. The zero value is usable.
type Config struct {
	// HeartbeatInterval is how often nodes are told to heartbeat (default 1 s).
	HeartbeatInterval time.Duration
	// SuspectAfter is how long a node may stay silent before it becomes suspect (default 5 s).
	SuspectAfter time.Duration
	// LostAfter is how long a node may stay silent before it is marked lost (default 60 s).
	LostAfter time.Duration
	// Now is the clock (default time.Now); tests inject a fake one.
	Now func() time.Time
	// Probe connects to a node's address (default: a TCP dial, see DialProbe). Probes tell a
	// node that is gone from one that is slow: a suspect node whose address refuses
	// connections, after it was reachable once in this process's life, is lost at once.
	Probe func(ctx context.Context, addr string) ProbeResult
	// OnChange, when set, receives every event, one at a time and in the order they happened
	// (the head logs them; the dataset registry subscribes itself in NewDatasets). It may call
	// back into the Membership; its events are then delivered after it returns.
	OnChange func(Event)
}

func (c Config) withDefaults() Config {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.SuspectAfter <= 0 {
		c.SuspectAfter = max(DefaultSuspectAfter, 3*c.HeartbeatInterval)
		if c.LostAfter > 0 && c.LostAfter < c.SuspectAfter {
			c.SuspectAfter = c.LostAfter
		}
	}
	if c.LostAfter <= 0 {
		c.LostAfter = max(DefaultLostAfter, 2*c.SuspectAfter)
	}
	if c.LostAfter < c.SuspectAfter {
		c.LostAfter = c.SuspectAfter
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Probe == nil {
		c.Probe = DialProbe
	}
	return c
}

// Membership is the head's table of data nodes. It is safe for concurrent use.
//
// A node is alive from its registration; SuspectAfter without a heartbeat makes it suspect and
// LostAfter lost. A heartbeat makes a suspect node alive again; a lost node must register again
// and comes back as a node the head holds nothing on. A registration under a known ID with the
// same boot ID and address is the same process and changes nothing but the time it was heard
// from; another boot ID (or address) is a restart: the old process is lost, the new one joins.
//
// Silence is measured in time the head itself was running: when the table was not checked for
// longer than SuspectAfter (the head was stopped or starved of CPU, and so could not have
// heard heartbeats either), that gap is not held against the nodes. Run checks four times per
// SuspectAfter; a caller without Run must call Check at least that often.
type Membership struct {
	cfg Config

	mu      sync.Mutex
	nodes   map[string]*member
	pending []Event
	// listeners receive every event after cfg.OnChange: the parts of the head built over the
	// membership (the dataset registry) subscribe in their constructors.
	listeners []func(Event)
	// checked is the last time the table was checked for silent nodes.
	checked time.Time

	// delivering serializes OnChange calls; whoever holds it drains pending.
	delivering sync.Mutex
	// joined wakes Run to probe a process that just registered, so that its address is known
	// reachable (and a refused connection later means it is gone) without waiting for a tick.
	joined chan struct{}
}

// member is a node with what the head keeps about it beyond what it shows.
type member struct {
	Node
	// heard is LastHeartbeat moved forward over the gaps when the head itself was not running;
	// silence is measured from it.
	heard time.Time
	// reachable is set once a probe of this process's address connected.
	reachable bool
}

// NewMembership returns an empty membership table.
func NewMembership(cfg Config) *Membership {
	return &Membership{cfg: cfg.withDefaults(), nodes: map[string]*member{}, joined: make(chan struct{}, 1)}
}

// HeartbeatInterval is the interval nodes are told to heartbeat at.
func (m *Membership) HeartbeatInterval() time.Duration { return m.cfg.HeartbeatInterval }

// SuspectAfter is how long a node may stay silent before it becomes suspect.
func (m *Membership) SuspectAfter() time.Duration { return m.cfg.SuspectAfter }

// LostAfter is how long a node may stay silent before it is marked lost.
func (m *Membership) LostAfter() time.Duration { return m.cfg.LostAfter }

// Register records a registration of node id at addr from the process bootID (may be empty:
// unknown). A new node, a lost one, or a known one with another boot ID or address joins
// (after EventLost of the process it replaces); the same process registering again (its
// heartbeat was refused, a retried call) only counts as heard from, and is alive again if it was
// suspect. The ID, address and boot ID must be printable text; ID and address non-empty.
func (m *Membership) Register(id, addr, bootID string) (Node, error) {
	if err := checkName("node id", id); err != nil {
		return Node{}, err
	}
	if err := checkName("address of node "+id, addr); err != nil {
		return Node{}, err
	}
	if bootID != "" {
		if err := checkName("boot id of node "+id, bootID); err != nil {
			return Node{}, err
		}
	}
	m.mu.Lock()
	now := m.cfg.Now()
	m.expireLocked(now)
	old, known := m.nodes[id]
	var out Node
	switch {
	case known && old.State != StateLost && bootID != "" && old.BootID == bootID && old.Addr == addr:
		old.LastHeartbeat, old.heard = now, now
		if old.State == StateSuspect {
			old.State = StateAlive
			m.pending = append(m.pending, Event{Kind: EventRecovered, Node: old.Node, Reason: "registered again"})
		}
		out = old.Node
	default:
		if known && old.State != StateLost {
			old.State = StateLost
			reason := "restarted: registered with a new boot id"
			switch {
			case bootID == "" || old.BootID == "":
				reason = "registered again without a boot id: it may have restarted"
			case old.Addr != addr:
				reason = "registered again at another address " + addr
			}
			m.pending = append(m.pending, Event{Kind: EventLost, Node: old.Node, Reason: reason})
		}
		n := &member{Node: Node{ID: id, Addr: addr, BootID: bootID, State: StateAlive, RegisteredAt: now, LastHeartbeat: now}, heard: now}
		m.nodes[id] = n
		out = n.Node
		m.pending = append(m.pending, Event{Kind: EventJoined, Node: out})
		select {
		case m.joined <- struct{}{}:
		default: // a probe is due already
		}
	}
	m.mu.Unlock()
	m.flush()
	return out, nil
}

// Heartbeat records that node id is alive; a suspect node becomes alive again. It fails with
// errs.NotFound when the head does not know the node or has marked it lost: the node must
// register again (the head may have restarted, or rebuilt the lost node's partitions).
func (m *Membership) Heartbeat(id string) error {
	m.mu.Lock()
	now := m.cfg.Now()
	m.expireLocked(now)
	n, ok := m.nodes[id]
	var err error
	switch {
	case !ok:
		err = errs.NotFoundf("node %q is not registered with this head: register again", id)
	case n.State == StateLost:
		err = errs.NotFoundf("node %q was marked lost and its partitions rebuilt elsewhere: register again", id)
	default:
		n.LastHeartbeat, n.heard = now, now
		if n.State == StateSuspect {
			n.State = StateAlive
			m.pending = append(m.pending, Event{Kind: EventRecovered, Node: n.Node, Reason: "heartbeat"})
		}
	}
	m.mu.Unlock()
	m.flush()
	return err
}

// Check marks nodes silent for longer than SuspectAfter suspect and those silent for longer
// than LostAfter lost.
func (m *Membership) Check() {
	m.mu.Lock()
	m.expireLocked(m.cfg.Now())
	m.mu.Unlock()
	m.flush()
}

// Nodes returns a snapshot of every known node, alive, suspect or lost, sorted by ID.
func (m *Membership) Nodes() []Node {
	m.mu.Lock()
	m.expireLocked(m.cfg.Now())
	out := make([]Node, 0, len(m.nodes))
	for _, n := range m.nodes {
		out = append(out, n.Node)
	}
	m.mu.Unlock()
	m.flush()
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Node returns the node with the given ID as it is now.
func (m *Membership) Node(id string) (Node, bool) {
	m.mu.Lock()
	m.expireLocked(m.cfg.Now())
	n, ok := m.nodes[id]
	var out Node
	if ok {
		out = n.Node
	}
	m.mu.Unlock()
	m.flush()
	return out, ok
}

// Probe connects once to every node that is suspect, or alive and not yet known reachable,
// each within timeout, in parallel. A suspect node whose address refuses connections after it
// was reachable is marked lost at once: no process listens there any more (it was killed, or
// its machine restarted), so waiting for LostAfter would only delay the rebuild. A timeout or
// any other error changes nothing: on a busy machine it says nothing about the node.
func (m *Membership) Probe(ctx context.Context, timeout time.Duration) {
	m.mu.Lock()
	m.expireLocked(m.cfg.Now())
	var targets []Node
	for _, n := range m.nodes {
		if n.State == StateSuspect || (n.State == StateAlive && !n.reachable) {
			targets = append(targets, n.Node)
		}
	}
	m.mu.Unlock()
	m.flush()
	results := make([]ProbeResult, len(targets))
	var wg sync.WaitGroup
	for i, n := range targets {
		wg.Add(1)
		safe.Spawn("membership probe", func() error {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			results[i] = m.cfg.Probe(pctx, n.Addr)
			return nil
		}, func(error) { wg.Done() })
	}
	wg.Wait()
	m.mu.Lock()
	for i, was := range targets {
		n, ok := m.nodes[was.ID]
		// The answer is about the process probed; it may have been replaced meanwhile.
		if !ok || n.BootID != was.BootID || n.Addr != was.Addr || !n.RegisteredAt.Equal(was.RegisteredAt) {
			continue
		}
		switch results[i] {
		case ProbeReachable:
			n.reachable = true
		case ProbeRefused:
			if n.State == StateSuspect && n.reachable {
				n.State = StateLost
				m.pending = append(m.pending, Event{Kind: EventLost, Node: n.Node, Reason: "suspect, and its address refuses connections"})
			}
		}
	}
	m.mu.Unlock()
	m.flush()
}

// Run checks for suspect and lost nodes four times per SuspectAfter (on the real clock) and
// probes suspect nodes and, as soon as they register, new ones, until ctx ends, so changes are reported even when nobody reads the
// table.
func (m *Membership) Run(ctx context.Context) {
	period := m.cfg.SuspectAfter / 4
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.Check()
			m.Probe(ctx, max(period, time.Second))
		case <-m.joined:
			m.Probe(ctx, max(period, time.Second))
		}
	}
}

// expireLocked moves silent nodes to suspect and lost and queues their events, in ID order.
func (m *Membership) expireLocked(now time.Time) {
	if gap := now.Sub(m.checked); !m.checked.IsZero() && gap > m.cfg.SuspectAfter {
		// The head was not checking: it could not hear heartbeats either.
		for _, n := range m.nodes {
			n.heard = minTime(n.heard.Add(gap), now)
		}
	}
	if now.After(m.checked) {
		m.checked = now
	}
	var evs []Event
	for _, n := range m.nodes {
		silent := now.Sub(n.heard)
		switch {
		case n.State != StateLost && silent > m.cfg.LostAfter:
			n.State = StateLost
			evs = append(evs, Event{Kind: EventLost, Node: n.Node, Reason: "silent for more than " + m.cfg.LostAfter.String()})
		case n.State == StateAlive && silent > m.cfg.SuspectAfter:
			n.State = StateSuspect
			evs = append(evs, Event{Kind: EventSuspect, Node: n.Node, Reason: "silent for more than " + m.cfg.SuspectAfter.String()})
		}
	}
	slices.SortFunc(evs, func(a, b Event) int { return strings.Compare(a.Node.ID, b.Node.ID) })
	m.pending = append(m.pending, evs...)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// subscribe makes f receive every event from now on, after OnChange and the listeners
// subscribed before it, one event at a time and in order, as OnChange does.
func (m *Membership) subscribe(f func(Event)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.listeners = append(m.listeners, f)
}

// flush delivers queued events. Only one goroutine delivers at a time; one that finds delivery
// under way leaves its events to it, so a callback that calls back into m does not deadlock.
func (m *Membership) flush() {
	for {
		m.mu.Lock()
		deliver := m.cfg.OnChange != nil || len(m.listeners) > 0
		if !deliver {
			m.pending = nil
		}
		m.mu.Unlock()
		if !deliver || !m.delivering.TryLock() {
			return
		}
		m.mu.Lock()
		evs := m.pending
		m.pending = nil
		listeners := m.listeners
		m.mu.Unlock()
		for _, e := range evs {
			metrics.NodeEvent(string(e.Kind))
			if m.cfg.OnChange != nil {
				m.cfg.OnChange(e)
			}
			for _, f := range listeners {
				f(e)
			}
		}
		m.delivering.Unlock()
		m.mu.Lock()
		more := len(m.pending) > 0
		m.mu.Unlock()
		if !more {
			return
		}
	}
}

// checkName validates an ID or address sent by a node.
func checkName(what, v string) error {
	if v == "" {
		return errs.Invalidf("%s is empty", what)
	}
	if len(v) > maxIDLen {
		return errs.Invalidf("%s is %d bytes long, more than %d", what, len(v), maxIDLen)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return errs.Invalidf("%s %q contains a control character", what, v)
		}
	}
	return nil
}

// PlacementNodes returns the nodes new work (scan tasks, dataset partitions) may be placed on
// (schedule.Placeable): the alive ones, or the suspect ones when none is alive.
func PlacementNodes(nodes []Node) []Node {
	return schedule.Placeable(nodes, func(n Node) schedule.State { return schedule.State(n.State) })
}

// ReachableNodes returns the nodes that are not lost: reads of what they hold still go to them.
func ReachableNodes(nodes []Node) []Node {
	var out []Node
	for _, n := range nodes {
		if n.State != StateLost {
			out = append(out, n)
		}
	}
	return out
}

// Addrs lists the nodes' addresses, in order.
func Addrs(nodes []Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Addr
	}
	return out
}
