package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// eventLog records OnChange events as "kind id@addr".
type eventLog struct {
	mu  sync.Mutex
	evs []string
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	l.evs = append(l.evs, fmt.Sprintf("%s %s@%s", e.Kind, e.Node.ID, e.Node.Addr))
	l.mu.Unlock()
}

func (l *eventLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.evs
	l.evs = nil
	return out
}

// Timeouts of newTestMembership.
const (
	tSuspect = 3 * time.Second
	tLost    = 10 * time.Second
)

func newTestMembership() (*Membership, *fakeClock, *eventLog) {
	clock, log := newFakeClock(), &eventLog{}
	m := NewMembership(Config{HeartbeatInterval: time.Second, SuspectAfter: tSuspect, LostAfter: tLost, Now: clock.Now, OnChange: log.add})
	return m, clock, log
}

// tick moves the clock one second, heartbeats the given nodes and checks, as the head's Run
// loop and the agents would.
func tick(t *testing.T, m *Membership, clock *fakeClock, beating ...string) {
	t.Helper()
	clock.Advance(time.Second)
	for _, id := range beating {
		if err := m.Heartbeat(id); err != nil {
			t.Fatalf("heartbeat %s: %v", id, err)
		}
	}
	m.Check()
}

func states(m *Membership) string {
	var parts []string
	for _, n := range m.Nodes() {
		parts = append(parts, n.ID+"="+string(n.State))
	}
	return strings.Join(parts, " ")
}

func wantEvents(t *testing.T, log *eventLog, want ...string) {
	t.Helper()
	got := log.take()
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestMembershipJoinHeartbeatLossRejoin(t *testing.T) {
	m, clock, log := newTestMembership()
	start := clock.Now()
	for _, id := range []string{"n2", "n1", "n3"} {
		if _, err := m.Register(id, "127.0.0.1:1"+id[1:], "boot-"+id); err != nil {
			t.Fatal(err)
		}
	}
	wantEvents(t, log, "joined n2@127.0.0.1:12", "joined n1@127.0.0.1:11", "joined n3@127.0.0.1:13")
	nodes := m.Nodes()
	if len(nodes) != 3 || nodes[0].ID != "n1" || nodes[2].ID != "n3" {
		t.Fatalf("Nodes() not sorted by ID: %+v", nodes)
	}
	if n := nodes[0]; n.Addr != "127.0.0.1:11" || n.BootID != "boot-n1" || n.State != StateAlive || !n.RegisteredAt.Equal(start) || !n.LastHeartbeat.Equal(start) {
		t.Errorf("n1 = %+v", n)
	}

	// n1 and n2 heartbeat every second; n3 stays silent: suspect after SuspectAfter, lost
	// after LostAfter.
	for i := 1; i <= 12; i++ {
		tick(t, m, clock, "n1", "n2")
		want := "n1=alive n2=alive n3=alive"
		switch {
		case i > 10:
			want = "n1=alive n2=alive n3=lost"
		case i > 3:
			want = "n1=alive n2=alive n3=suspect"
		}
		if got := states(m); got != want {
			t.Errorf("at +%ds: %s, want %s", i, got, want)
		}
	}
	wantEvents(t, log, "suspect n3@127.0.0.1:13", "lost n3@127.0.0.1:13")
	n1 := m.Nodes()[0]
	if !n1.LastHeartbeat.Equal(start.Add(12*time.Second)) || !n1.RegisteredAt.Equal(start) {
		t.Errorf("n1 after heartbeats = %+v", n1)
	}

	// A lost node's heartbeat is refused: it must register again.
	err := m.Heartbeat("n3")
	if errs.CategoryOf(err) != errs.NotFound || !strings.Contains(err.Error(), "register again") {
		t.Errorf("heartbeat of lost n3 = %v, want NotFound telling it to register again", err)
	}
	// It registers again, same process: it joins as a node the head holds nothing on.
	if _, err := m.Register("n3", "127.0.0.1:13", "boot-n3"); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, log, "joined n3@127.0.0.1:13")
	n3 := m.Nodes()[2]
	if n3.State != StateAlive || !n3.RegisteredAt.Equal(clock.Now()) {
		t.Errorf("rejoined n3 = %+v", n3)
	}

	// Everybody goes silent: Check alone (no reader) reports the changes, in ID order, once.
	for range 11 {
		tick(t, m, clock)
	}
	wantEvents(t, log, "suspect n1@127.0.0.1:11", "suspect n2@127.0.0.1:12", "suspect n3@127.0.0.1:13",
		"lost n1@127.0.0.1:11", "lost n2@127.0.0.1:12", "lost n3@127.0.0.1:13")
	if got := states(m); got != "n1=lost n2=lost n3=lost" {
		t.Errorf("after silence: %s", got)
	}
}

// A node late with its heartbeats is suspect and comes back without any event that moves data.
func TestMembershipSuspectRecovers(t *testing.T) {
	m, clock, log := newTestMembership()
	var moved []string
	m.cfg.OnChange = func(e Event) {
		log.add(e)
		if e.MovesData() {
			moved = append(moved, e.Node.ID)
		}
	}
	if _, err := m.Register("a", "h:1", "boot-a"); err != nil {
		t.Fatal(err)
	}
	log.take()
	for range 4 {
		tick(t, m, clock)
	}
	if got := states(m); got != "a=suspect" {
		t.Fatalf("after 4 s of silence: %s", got)
	}
	// A heartbeat brings it back.
	if err := m.Heartbeat("a"); err != nil {
		t.Fatalf("heartbeat of a suspect node: %v", err)
	}
	if got := states(m); got != "a=alive" {
		t.Errorf("after its heartbeat: %s", got)
	}
	// Silent again, up to just before LostAfter; then a registration of the same process (same
	// boot ID and address) brings it back too, keeping its registration time.
	registered := m.Nodes()[0].RegisteredAt
	for range 9 {
		tick(t, m, clock)
	}
	if got := states(m); got != "a=suspect" {
		t.Fatalf("after 9 s of silence: %s", got)
	}
	n, err := m.Register("a", "h:1", "boot-a")
	if err != nil {
		t.Fatal(err)
	}
	if n.State != StateAlive || !n.RegisteredAt.Equal(registered) || !n.LastHeartbeat.Equal(clock.Now()) {
		t.Errorf("same process registering again = %+v", n)
	}
	// And while alive, a registration of the same process changes nothing.
	if _, err := m.Register("a", "h:1", "boot-a"); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, log, "suspect a@h:1", "recovered a@h:1", "suspect a@h:1", "recovered a@h:1")
	if len(moved) != 0 {
		t.Errorf("events that move data: %v", moved)
	}
}

// A registration from another process under a known ID is a restart: the old process is lost
// at once (its partitions are gone) and the new one joins, without waiting for any timeout.
func TestMembershipNewBootIDIsARestart(t *testing.T) {
	m, _, log := newTestMembership()
	if _, err := m.Register("a", "h:1", "boot-1"); err != nil {
		t.Fatal(err)
	}
	log.take()
	for _, c := range []struct {
		addr, boot string
		want       []string
	}{
		{"h:1", "boot-1", nil}, // the same process: nothing
		{"h:1", "boot-2", []string{"lost a@h:1", "joined a@h:1"}}, // restarted
		{"h:2", "boot-2", []string{"lost a@h:1", "joined a@h:2"}}, // same process, new address: its partitions are not where the head looks
		{"h:2", "", []string{"lost a@h:2", "joined a@h:2"}},       // no boot ID: may have restarted
		{"h:2", "", []string{"lost a@h:2", "joined a@h:2"}},
	} {
		n, err := m.Register("a", c.addr, c.boot)
		if err != nil {
			t.Fatal(err)
		}
		if n.State != StateAlive || n.BootID != c.boot || n.Addr != c.addr {
			t.Errorf("after registering %s %q: %+v", c.addr, c.boot, n)
		}
		wantEvents(t, log, c.want...)
	}
}

// A suspect node whose address refuses connections after it once accepted them is lost at
// once; a probe that times out, a refusal of a node never reached, and a refusal while the
// node heartbeats change nothing.
func TestMembershipProbe(t *testing.T) {
	m, clock, log := newTestMembership()
	var mu sync.Mutex
	answers := map[string]ProbeResult{"h:a": ProbeReachable, "h:b": ProbeReachable, "h:c": ProbeRefused, "h:d": ProbeReachable}
	probed := map[string]int{}
	m.cfg.Probe = func(_ context.Context, addr string) ProbeResult {
		mu.Lock()
		defer mu.Unlock()
		probed[addr]++
		return answers[addr]
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		if _, err := m.Register(id, "h:"+id, "boot-"+id); err != nil {
			t.Fatal(err)
		}
	}
	log.take()
	ctx := context.Background()
	m.Probe(ctx, time.Second) // a, b and d are known reachable now; c is not
	m.Probe(ctx, time.Second)
	if probed["h:a"] != 1 || probed["h:c"] != 2 {
		t.Errorf("probes %v: want a reachable node probed once, an unreached one again", probed)
	}

	// a dies (its port refuses), b is slow (probes time out), c was never reached, d still
	// heartbeats but refuses probes.
	mu.Lock()
	answers["h:a"], answers["h:b"], answers["h:d"] = ProbeRefused, ProbeUnknown, ProbeRefused
	mu.Unlock()
	m.Probe(ctx, time.Second)
	if got := states(m); got != "a=alive b=alive c=alive d=alive" {
		t.Errorf("alive nodes are lost by a probe: %s", got)
	}
	for range 4 {
		tick(t, m, clock, "d")
	}
	wantEvents(t, log, "suspect a@h:a", "suspect b@h:b", "suspect c@h:c")
	m.Probe(ctx, time.Second)
	if got := states(m); got != "a=lost b=suspect c=suspect d=alive" {
		t.Errorf("after probing suspects: %s", got)
	}
	wantEvents(t, log, "lost a@h:a")

	// A probe answer about a process that has been replaced since is ignored.
	m.cfg.Probe = func(_ context.Context, addr string) ProbeResult {
		if addr == "h:b" {
			if _, err := m.Register("b", "h:b", "boot-b2"); err != nil {
				t.Error(err)
			}
		}
		return ProbeRefused
	}
	m.Probe(ctx, time.Second)
	if got := states(m); got != "a=lost b=alive c=suspect d=alive" {
		t.Errorf("after b restarted during its probe: %s", got)
	}
}

// While the head itself does not run (stopped, or starved of CPU) it hears no heartbeat; that
// gap is not held against the nodes.
func TestMembershipHeadPauseIsNotSilence(t *testing.T) {
	m, clock, log := newTestMembership()
	if _, err := m.Register("a", "h:1", "boot-a"); err != nil {
		t.Fatal(err)
	}
	log.take()
	tick(t, m, clock)
	clock.Advance(2 * time.Minute) // no check, no heartbeat: the head was paused
	if got := states(m); got != "a=alive" {
		t.Errorf("after the head's pause: %s", got)
	}
	if err := m.Heartbeat("a"); err != nil {
		t.Errorf("heartbeat after the head's pause: %v", err)
	}
	for range 4 {
		tick(t, m, clock)
	}
	if got := states(m); got != "a=suspect" {
		t.Errorf("silent for 4 s while the head runs: %s", got)
	}
	wantEvents(t, log, "suspect a@h:1")
}

func TestPlacementNodes(t *testing.T) {
	nodes := []Node{{ID: "a", Addr: "h:a", State: StateAlive}, {ID: "b", Addr: "h:b", State: StateSuspect}, {ID: "c", Addr: "h:c", State: StateLost}, {ID: "d", Addr: "h:d", State: StateAlive}}
	if got := strings.Join(Addrs(PlacementNodes(nodes)), " "); got != "h:a h:d" {
		t.Errorf("placement = %s, want the alive nodes", got)
	}
	if got := strings.Join(Addrs(ReachableNodes(nodes)), " "); got != "h:a h:b h:d" {
		t.Errorf("reachable = %s, want all but the lost node", got)
	}
	if got := strings.Join(Addrs(PlacementNodes(nodes[1:3])), " "); got != "h:b" {
		t.Errorf("placement without an alive node = %s, want the suspect one", got)
	}
}

func TestMembershipUnknownAndInvalid(t *testing.T) {
	m, _, log := newTestMembership()
	err := m.Heartbeat("ghost")
	if errs.CategoryOf(err) != errs.NotFound || !strings.Contains(err.Error(), `"ghost"`) {
		t.Errorf("heartbeat of unknown node = %v", err)
	}
	for _, c := range []struct{ id, addr string }{
		{"", "127.0.0.1:1"}, {"n1", ""}, {"n\x001", "a:1"}, {strings.Repeat("x", 300), "a:1"},
	} {
		if _, err := m.Register(c.id, c.addr, "b"); errs.CategoryOf(err) != errs.InvalidInput {
			t.Errorf("Register(%q, %q) = %v, want InvalidInput", c.id, c.addr, err)
		}
	}
	if len(m.Nodes()) != 0 {
		t.Errorf("invalid registrations were recorded: %+v", m.Nodes())
	}
	wantEvents(t, log)
}

// An OnChange callback may read the membership without deadlocking, and sees the change.
func TestMembershipCallbackReadsBack(t *testing.T) {
	clock := newFakeClock()
	var m *Membership
	var seen []string
	m = NewMembership(Config{Now: clock.Now, OnChange: func(e Event) {
		seen = append(seen, fmt.Sprintf("%s:%s", e.Kind, states(m)))
	}})
	if _, err := m.Register("a", "h:1", "boot-a"); err != nil {
		t.Fatal(err)
	}
	for range DefaultLostAfter/time.Second + 1 {
		clock.Advance(time.Second)
		m.Check()
	}
	if _, err := m.Register("a", "h:1", ""); err != nil {
		t.Fatal(err)
	}
	want := "joined:a=alive suspect:a=suspect lost:a=lost joined:a=alive"
	if got := strings.Join(seen, " "); got != want {
		t.Errorf("callback saw %q, want %q", got, want)
	}
}

func TestMembershipDefaults(t *testing.T) {
	m := NewMembership(Config{})
	if m.HeartbeatInterval() != time.Second || m.SuspectAfter() != 5*time.Second || m.LostAfter() != time.Minute {
		t.Errorf("defaults: interval %v, suspect after %v, lost after %v", m.HeartbeatInterval(), m.SuspectAfter(), m.LostAfter())
	}
}

// Run probes a process as soon as it registers, not at its next tick: a node killed right after
// joining is then known reachable, and its refused port makes it lost at once instead of after
// LostAfter of silence.
func TestMembershipProbesNewNodesAtOnce(t *testing.T) {
	probed := make(chan string, 4)
	m := NewMembership(Config{
		HeartbeatInterval: time.Second, SuspectAfter: time.Hour, LostAfter: 2 * time.Hour,
		Probe: func(_ context.Context, addr string) ProbeResult {
			probed <- addr
			return ProbeReachable
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if _, err := m.Register("a", "h:a", "boot-a"); err != nil {
		t.Fatal(err)
	}
	// The ticker fires every 15 minutes here: only the registration can have asked for this probe.
	select {
	case addr := <-probed:
		if addr != "h:a" {
			t.Fatalf("probed %s, want h:a", addr)
		}
	case <-time.After(time.Minute):
		t.Fatal("a new node was not probed until the next tick")
	}
}
