package cluster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

// Defaults for Config fields left zero.
const (
	DefaultHeartbeatInterval = time.Second
	DefaultLostAfter         = 3 * time.Second
)

// maxIDLen bounds node IDs and addresses, which are echoed into logs and system.nodes.
const maxIDLen = 256

// State is a node's membership state as the head sees it.
type State string

const (
	// StateAlive: the node registered and its last heartbeat is at most LostAfter old.
	StateAlive State = "alive"
	// StateLost: the node has not been heard from for more than LostAfter. It stays listed
	// until it registers again.
	StateLost State = "lost"
)

// Node is one data node as the head last saw it.
type Node struct {
	ID    string
	Addr  string
	State State
	// RegisteredAt is the time of the node's latest registration.
	RegisteredAt time.Time
	// LastHeartbeat is the last time the node was heard from (registration counts).
	LastHeartbeat time.Time
}

// EventKind says what changed.
type EventKind string

const (
	// EventJoined: a node registered (for the first time, again after being lost, or again
	// while alive, e.g. after a restart; its address may have changed).
	EventJoined EventKind = "joined"
	// EventLost: an alive node missed heartbeats for longer than LostAfter.
	EventLost EventKind = "lost"
)

// Event reports one membership change with the node as it is after the change.
type Event struct {
	Kind EventKind
	Node Node
}

// Config configures a Membership. The zero value is usable.
type Config struct {
	// HeartbeatInterval is how often nodes are told to heartbeat (default 1 s).
	HeartbeatInterval time.Duration
	// LostAfter is how long a node may stay silent before it is marked lost (default 3 s).
	LostAfter time.Duration
	// Now is the clock (default time.Now); tests inject a fake one.
	Now func() time.Time
	// OnChange, when set, receives every event, one at a time and in the order they happened.
	// It may call back into the Membership; its events are then delivered after it returns.
	OnChange func(Event)
}

func (c Config) withDefaults() Config {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.LostAfter <= 0 {
		c.LostAfter = DefaultLostAfter
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Membership is the head's table of data nodes. It is safe for concurrent use.
//
// A node is alive from its registration until LostAfter passes without a heartbeat; it is then
// lost, and only a new registration (same ID, any address) makes it alive again. Losses are
// detected whenever the table is read or checked (Nodes, Check, Run), so a snapshot never shows
// a node alive that has been silent longer than LostAfter.
type Membership struct {
	cfg Config

	mu      sync.Mutex
	nodes   map[string]*Node
	pending []Event

	// delivering serializes OnChange calls; whoever holds it drains pending.
	delivering sync.Mutex
}

// NewMembership returns an empty membership table.
func NewMembership(cfg Config) *Membership {
	return &Membership{cfg: cfg.withDefaults(), nodes: map[string]*Node{}}
}

// HeartbeatInterval is the interval nodes are told to heartbeat at.
func (m *Membership) HeartbeatInterval() time.Duration { return m.cfg.HeartbeatInterval }

// LostAfter is how long a node may stay silent before it is marked lost.
func (m *Membership) LostAfter() time.Duration { return m.cfg.LostAfter }

// Register adds a node or refreshes it: it becomes alive at addr, with RegisteredAt and
// LastHeartbeat set to now. The ID and address must be non-empty printable text.
func (m *Membership) Register(id, addr string) (Node, error) {
	if err := checkName("node id", id); err != nil {
		return Node{}, err
	}
	if err := checkName("address of node "+id, addr); err != nil {
		return Node{}, err
	}
	m.mu.Lock()
	now := m.cfg.Now()
	m.expireLocked(now)
	n := &Node{ID: id, Addr: addr, State: StateAlive, RegisteredAt: now, LastHeartbeat: now}
	m.nodes[id] = n
	out := *n
	m.pending = append(m.pending, Event{Kind: EventJoined, Node: out})
	m.mu.Unlock()
	m.flush()
	return out, nil
}

// Heartbeat records that node id is alive. It fails with errs.NotFound when the head does not
// know the node or has marked it lost: the node must register again (the head may have
// restarted, or reassigned the lost node's work).
func (m *Membership) Heartbeat(id string) error {
	m.mu.Lock()
	now := m.cfg.Now()
	m.expireLocked(now)
	n, ok := m.nodes[id]
	var err error
	switch {
	case !ok:
		err = errs.NotFoundf("node %q is not registered with this head: register again", id)
	case n.State != StateAlive:
		err = errs.NotFoundf("node %q was marked lost after %s without a heartbeat: register again", id, m.cfg.LostAfter)
	default:
		n.LastHeartbeat = now
	}
	m.mu.Unlock()
	m.flush()
	return err
}

// Check marks every node silent for longer than LostAfter as lost.
func (m *Membership) Check() {
	m.mu.Lock()
	m.expireLocked(m.cfg.Now())
	m.mu.Unlock()
	m.flush()
}

// Nodes returns a snapshot of every known node, alive or lost, sorted by ID.
func (m *Membership) Nodes() []Node {
	m.mu.Lock()
	m.expireLocked(m.cfg.Now())
	out := make([]Node, 0, len(m.nodes))
	for _, n := range m.nodes {
		out = append(out, *n)
	}
	m.mu.Unlock()
	m.flush()
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Run checks for lost nodes every quarter of LostAfter (on the real clock) until ctx ends, so
// losses are reported even when nobody reads the table.
func (m *Membership) Run(ctx context.Context) {
	t := time.NewTicker(m.cfg.LostAfter / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.Check()
		}
	}
}

// expireLocked marks silent nodes lost and queues their events, in ID order.
func (m *Membership) expireLocked(now time.Time) {
	var lost []Event
	for _, n := range m.nodes {
		if n.State == StateAlive && now.Sub(n.LastHeartbeat) > m.cfg.LostAfter {
			n.State = StateLost
			lost = append(lost, Event{Kind: EventLost, Node: *n})
		}
	}
	slices.SortFunc(lost, func(a, b Event) int { return strings.Compare(a.Node.ID, b.Node.ID) })
	m.pending = append(m.pending, lost...)
}

// flush delivers queued events. Only one goroutine delivers at a time; one that finds delivery
// under way leaves its events to it, so a callback that calls back into m does not deadlock.
func (m *Membership) flush() {
	for {
		if m.cfg.OnChange == nil {
			m.mu.Lock()
			m.pending = nil
			m.mu.Unlock()
			return
		}
		if !m.delivering.TryLock() {
			return
		}
		m.mu.Lock()
		evs := m.pending
		m.pending = nil
		m.mu.Unlock()
		for _, e := range evs {
			m.cfg.OnChange(e)
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
