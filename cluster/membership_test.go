package cluster

import (
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

func newTestMembership() (*Membership, *fakeClock, *eventLog) {
	clock, log := newFakeClock(), &eventLog{}
	m := NewMembership(Config{HeartbeatInterval: time.Second, LostAfter: 3 * time.Second, Now: clock.Now, OnChange: log.add})
	return m, clock, log
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
		if _, err := m.Register(id, "127.0.0.1:1"+id[1:]); err != nil {
			t.Fatal(err)
		}
	}
	wantEvents(t, log, "joined n2@127.0.0.1:12", "joined n1@127.0.0.1:11", "joined n3@127.0.0.1:13")
	nodes := m.Nodes()
	if len(nodes) != 3 || nodes[0].ID != "n1" || nodes[2].ID != "n3" {
		t.Fatalf("Nodes() not sorted by ID: %+v", nodes)
	}
	if n := nodes[0]; n.Addr != "127.0.0.1:11" || n.State != StateAlive || !n.RegisteredAt.Equal(start) || !n.LastHeartbeat.Equal(start) {
		t.Errorf("n1 = %+v", n)
	}

	// n1 and n2 heartbeat every second for 10 s; n3 stays silent.
	for i := 0; i < 10; i++ {
		clock.Advance(time.Second)
		for _, id := range []string{"n1", "n2"} {
			if err := m.Heartbeat(id); err != nil {
				t.Fatalf("heartbeat %s at +%ds: %v", id, i+1, err)
			}
		}
		if i == 2 {
			// Exactly LostAfter of silence is still alive.
			if got := states(m); got != "n1=alive n2=alive n3=alive" {
				t.Errorf("at +3s: %s", got)
			}
		}
		if i == 3 {
			if got := states(m); got != "n1=alive n2=alive n3=lost" {
				t.Errorf("at +4s: %s", got)
			}
		}
	}
	wantEvents(t, log, "lost n3@127.0.0.1:13")
	n1 := m.Nodes()[0]
	if !n1.LastHeartbeat.Equal(start.Add(10*time.Second)) || !n1.RegisteredAt.Equal(start) {
		t.Errorf("n1 after heartbeats = %+v", n1)
	}

	// A lost node's heartbeat is refused: it must register again.
	err := m.Heartbeat("n3")
	if errs.CategoryOf(err) != errs.NotFound || !strings.Contains(err.Error(), "register again") {
		t.Errorf("heartbeat of lost n3 = %v, want NotFound telling it to register again", err)
	}
	// It rejoins at a new address.
	if _, err := m.Register("n3", "127.0.0.1:23"); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, log, "joined n3@127.0.0.1:23")
	n3 := m.Nodes()[2]
	if n3.State != StateAlive || n3.Addr != "127.0.0.1:23" || !n3.RegisteredAt.Equal(clock.Now()) {
		t.Errorf("rejoined n3 = %+v", n3)
	}

	// Everybody goes silent: Check alone (no reader) reports the losses, in ID order, once.
	clock.Advance(3*time.Second + time.Millisecond)
	m.Check()
	m.Check()
	wantEvents(t, log, "lost n1@127.0.0.1:11", "lost n2@127.0.0.1:12", "lost n3@127.0.0.1:23")
	if got := states(m); got != "n1=lost n2=lost n3=lost" {
		t.Errorf("after silence: %s", got)
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
		if _, err := m.Register(c.id, c.addr); errs.CategoryOf(err) != errs.InvalidInput {
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
	if _, err := m.Register("a", "h:1"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(DefaultLostAfter + time.Second)
	m.Check()
	want := "joined:a=alive lost:a=lost"
	if got := strings.Join(seen, " "); got != want {
		t.Errorf("callback saw %q, want %q", got, want)
	}
}

func TestMembershipDefaults(t *testing.T) {
	m := NewMembership(Config{})
	if m.HeartbeatInterval() != time.Second || m.LostAfter() != 3*time.Second {
		t.Errorf("defaults: interval %v, lost after %v", m.HeartbeatInterval(), m.LostAfter())
	}
}
