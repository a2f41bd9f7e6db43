package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/cluster/ticket"
)

const (
	testInterval     = 50 * time.Millisecond
	testSuspectAfter = 400 * time.Millisecond
	testLostAfter    = 1500 * time.Millisecond
	// eventually bounds every wait for a state change. It only guards against hanging (and is
	// generous, for a busy machine): the changes themselves come within LostAfter plus a few
	// intervals.
	eventually = 30 * time.Second
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// testHead is a head's Flight server carrying only the membership actions.
type testHead struct {
	key  *ticket.Keyring
	m    *Membership
	log  *eventLog
	srv  *grpc.Server
	addr string
	stop context.CancelFunc
}

// startHead serves a fresh membership on addr ("127.0.0.1:0" for any port).
func startHead(t *testing.T, addr string) *testHead {
	t.Helper()
	return startHeadWithKey(t, addr, nil)
}

// startHeadWithKey is startHead with a cluster secret that every action must be signed with.
func startHeadWithKey(t *testing.T, addr string, key *ticket.Keyring) *testHead {
	t.Helper()
	h := &testHead{key: key, log: &eventLog{}}
	h.m = NewMembership(Config{HeartbeatInterval: testInterval, SuspectAfter: testSuspectAfter, LostAfter: testLostAfter, OnChange: h.log.add})
	var lis net.Listener
	var err error
	for deadline := time.Now().Add(eventually); ; {
		if lis, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	h.addr = lis.Addr().String()
	h.srv = grpc.NewServer()
	flight.RegisterFlightServiceServer(h.srv, NewActions(h.m, key).Wrap(&flight.BaseFlightServer{}))
	go func() { _ = h.srv.Serve(lis) }()
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = func() { cancel(); h.srv.Stop() }
	go h.m.Run(ctx)
	t.Cleanup(h.stop)
	return h
}

// testNode is a data node: its Flight server and its agent.
type testNode struct {
	id, addr string
	srv      *grpc.Server
	cancel   context.CancelFunc
	done     chan error
}

func startNode(t *testing.T, id, head string) *testNode {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{id: id, addr: lis.Addr().String(), srv: grpc.NewServer()}
	flight.RegisterFlightServiceServer(n.srv, NodeActions(NodeConfig{ID: id, Version: "test", BootID: "boot-" + id})(&flight.BaseFlightServer{}))
	go func() { _ = n.srv.Serve(lis) }()
	t.Cleanup(n.srv.Stop)
	n.startAgent(t, head, "boot-"+id)
	return n
}

func (n *testNode) startAgent(t *testing.T, head, bootID string) {
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan error, 1)
	a := NewAgent(AgentConfig{ID: n.id, Addr: n.addr, Head: head, BootID: bootID, MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Logger: quietLog})
	go func() { n.done <- a.Run(ctx) }()
	t.Cleanup(cancel)
}

func (n *testNode) stopAgent(t *testing.T) {
	t.Helper()
	n.cancel()
	select {
	case err := <-n.done:
		if err != nil {
			t.Errorf("agent %s: Run = %v, want nil after cancel", n.id, err)
		}
	case <-time.After(eventually):
		t.Fatalf("agent %s did not stop after cancel", n.id)
	}
}

// waitStates polls until the head's membership reads want ("id=state ...").
func waitStates(t *testing.T, m *Membership, want string) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for {
		got := states(m)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("membership is %q, want %q", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func dial(t *testing.T, addr string) flight.Client {
	t.Helper()
	c, err := flight.NewClientWithMiddleware(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestAgentsJoinLeaveRejoinAndSurviveHeadRestart(t *testing.T) {
	head := startHead(t, "127.0.0.1:0")
	nodes := map[string]*testNode{}
	for _, id := range []string{"n1", "n2", "n3"} {
		nodes[id] = startNode(t, id, head.addr)
	}
	waitStates(t, head.m, "n1=alive n2=alive n3=alive")
	for _, n := range head.m.Nodes() {
		if n.Addr != nodes[n.ID].addr {
			t.Errorf("node %s registered address %s, its server is at %s", n.ID, n.Addr, nodes[n.ID].addr)
		}
	}
	// Each node's Flight server answers node-info.
	body, err := DoAction(context.Background(), dial(t, nodes["n2"].addr), ActionNodeInfo, nil)
	if err != nil {
		t.Fatal(err)
	}
	var info NodeInfo
	if err := json.Unmarshal(body, &info); err != nil || info.ID != "n2" || info.BootID != "boot-n2" || info.Version != "test" || info.StartedAt == "" {
		t.Errorf("node-info = %s (%v)", body, err)
	}

	// Stopping n2's agent (its server still accepts connections): n2 is lost after LostAfter,
	// the others stay alive.
	nodes["n2"].stopAgent(t)
	stopped := time.Now()
	waitStates(t, head.m, "n1=alive n2=lost n3=alive")
	for _, n := range head.m.Nodes() {
		if n.ID == "n2" && n.LastHeartbeat.After(stopped) {
			t.Errorf("n2 heard from after its agent stopped: %+v", n)
		}
	}
	// Restarted (a new agent: a new boot ID), it is alive again.
	nodes["n2"].startAgent(t, head.addr, "boot-n2-again")
	waitStates(t, head.m, "n1=alive n2=alive n3=alive")
	evs := strings.Join(head.log.take(), "; ")
	for _, want := range []string{"joined n1@", "joined n3@", "lost n2@", "joined n2@"} {
		if !strings.Contains(evs, want) {
			t.Errorf("events lack %q: %s", want, evs)
		}
	}
	if strings.Index(evs, "lost n2@") > strings.LastIndex(evs, "joined n2@") {
		t.Errorf("n2 rejoined before it was lost: %s", evs)
	}

	// The head restarts on the same address with an empty table: heartbeats are answered
	// NotFound and every agent registers again.
	head.stop()
	head2 := startHead(t, head.addr)
	waitStates(t, head2.m, "n1=alive n2=alive n3=alive")
}

// Agents started before the head keep retrying until it comes up.
func TestAgentWaitsForHead(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	n := startNode(t, "early", addr)
	time.Sleep(100 * time.Millisecond)
	head := startHead(t, addr)
	waitStates(t, head.m, "early=alive")
	n.stopAgent(t)
}

func TestActionsNeedTheClusterSecret(t *testing.T) {
	key := ticket.NewKeyring([]byte("the cluster secret"), nil)
	head := startHeadWithKey(t, "127.0.0.1:0", key)
	c := dial(t, head.addr)
	body := []byte(`{"id":"n1","addr":"h:1"}`)
	action := &flight.Action{Type: ActionRegister, Body: body}
	// header carries raw as the signature of a call.
	header := func(raw []byte) context.Context {
		return metadata.AppendToOutgoingContext(context.Background(), actionAuthHeader, base64.RawURLEncoding.EncodeToString(raw))
	}
	sealed := func(p ticket.Payload, signedAt time.Time) context.Context {
		raw, err := key.Seal(signedAt.Add(actionAuthSkew), p)
		if err != nil {
			t.Fatal(err)
		}
		return header(raw)
	}
	another := ticket.NewKeyring([]byte("another"), nil)
	partition := PartitionTicket{Dataset: "d", Columns: []int{0}}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		msg  string
	}{
		{"unsigned", context.Background(), "not signed with the cluster secret"},
		{"another secret", signAction(context.Background(), another, action), "signed with key " + another.Current().String()},
		{"malformed", metadata.AppendToOutgoingContext(context.Background(), actionAuthHeader, "yesterday:zz"), "malformed"},
		{"altered", header(append(key.SealRaw(ticket.Action, 1, time.Now().Add(time.Minute), []byte(`{}`)), 0)), "signature does not match"},
		{"stale", sealed(claimOf(action), time.Now().Add(-time.Hour)), "action ticket expired at"},
		{"from the future", sealed(claimOf(action), time.Now().Add(time.Hour)), "signed 1h0m0s away from this node's clock"},
		{"signed for another body", signAction(context.Background(), key, &flight.Action{Type: ActionRegister, Body: []byte(`{"id":"n2","addr":"h:2"}`)}), "does not match this call"},
		{"signed for another action", signAction(context.Background(), key, &flight.Action{Type: ActionHeartbeat, Body: body}), "does not match this call"},
		{"a partition ticket", sealed(partition, time.Now()), "a partition ticket is not an action ticket"},
		{"without a nonce", sealed(claimOf(action), time.Now()), "has no nonce"},
	} {
		_, err := DoAction(tc.ctx, c, ActionRegister, body)
		if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want UNAUTHENTICATED containing %q", tc.name, err, tc.msg)
		}
	}
	if nodes := head.m.Nodes(); len(nodes) != 0 {
		t.Fatalf("refused registrations left nodes behind: %+v", nodes)
	}
	signed := signAction(context.Background(), key, action)
	if _, err := DoAction(signed, c, ActionRegister, body); err != nil {
		t.Fatalf("a signed registration was refused: %v", err)
	}
	waitStates(t, head.m, "n1=alive")
	// The same signed call again, as one captured on the wire would be sent: refused.
	if _, err := DoAction(signed, c, ActionRegister, body); status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "already received") {
		t.Errorf("a replayed call: %v, want UNAUTHENTICATED saying it was already received", err)
	}
}

func TestReplayGuardForgetsExpiredNonces(t *testing.T) {
	g := replayGuard{seen: map[string]time.Time{}}
	now := time.Unix(1000, 0)
	if !g.first([]byte("a"), now.Add(time.Minute), now) || g.first([]byte("a"), now.Add(time.Minute), now.Add(time.Second)) {
		t.Fatal("a nonce is accepted once")
	}
	if !g.first([]byte("b"), now.Add(10*time.Minute), now.Add(2*time.Minute)) || len(g.seen) != 1 {
		t.Errorf("expired nonces are kept: %d", len(g.seen))
	}
}

// While the cluster secret rotates, a head holding the new secret and the old one as previous
// accepts calls signed with either; once the old one is removed, calls signed with it are
// refused.
func TestActionsAcceptThePreviousSecret(t *testing.T) {
	oldKey, newKey := []byte("old secret"), []byte("new secret")
	rotating := startHeadWithKey(t, "127.0.0.1:0", ticket.NewKeyring(newKey, oldKey))
	rotated := startHeadWithKey(t, "127.0.0.1:0", ticket.NewKeyring(newKey, nil))
	register := func(head *testHead, id string, key *ticket.Keyring) error {
		body := []byte(`{"id":"` + id + `","addr":"h:1"}`)
		_, err := DoAction(signAction(context.Background(), key, &flight.Action{Type: ActionRegister, Body: body}), dial(t, head.addr), ActionRegister, body)
		return err
	}
	notRotated, rotatedNode := ticket.NewKeyring(oldKey, nil), ticket.NewKeyring(newKey, oldKey)
	for _, c := range []struct {
		head *testHead
		id   string
		key  *ticket.Keyring
	}{{rotating, "old", notRotated}, {rotating, "new", rotatedNode}, {rotated, "new", rotatedNode}} {
		if err := register(c.head, c.id, c.key); err != nil {
			t.Errorf("node signing with key %s refused by a head holding %s: %v", c.key, c.head.key, err)
		}
	}
	err := register(rotated, "old", notRotated)
	if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "signed with key "+notRotated.Current().String()) {
		t.Errorf("a call signed with the removed secret: %v, want UNAUTHENTICATED naming its key", err)
	}
	// Registered: known to the head whatever state the silence since has put them in.
	for head, want := range map[*testHead]string{rotating: "new old", rotated: "new"} {
		var ids []string
		for _, n := range head.m.Nodes() {
			ids = append(ids, n.ID)
		}
		if got := strings.Join(ids, " "); got != want {
			t.Errorf("head holding %s knows nodes %q, want %q", head.key, got, want)
		}
	}
}

func TestActionErrors(t *testing.T) {
	head := startHead(t, "127.0.0.1:0")
	c := dial(t, head.addr)
	ctx := context.Background()
	for _, tc := range []struct {
		action, body string
		code         codes.Code
		msg          string
	}{
		{ActionHeartbeat, `{"id":"ghost"}`, codes.NotFound, "register again"},
		{ActionRegister, `{"id":"a"`, codes.InvalidArgument, ActionRegister},
		{ActionRegister, `{"id":"a","addr":"h:1","extra":1}`, codes.InvalidArgument, "extra"},
		{ActionRegister, `{"id":"","addr":"h:1"}`, codes.InvalidArgument, "node id is empty"},
		{"cachedb.unknown", ``, codes.Unimplemented, ""},
	} {
		_, err := DoAction(ctx, c, tc.action, []byte(tc.body))
		if status.Code(err) != tc.code || !strings.Contains(status.Convert(err).Message(), tc.msg) {
			t.Errorf("%s %s: %v, want %v containing %q", tc.action, tc.body, err, tc.code, tc.msg)
		}
	}
	body, err := DoAction(ctx, c, ActionRegister, []byte(`{"id":"a","addr":"h:1"}`))
	var resp RegisterResponse
	if err != nil || json.Unmarshal(body, &resp) != nil || resp.HeartbeatIntervalMS != testInterval.Milliseconds() || resp.SuspectAfterMS != testSuspectAfter.Milliseconds() || resp.LostAfterMS != testLostAfter.Milliseconds() {
		t.Errorf("register = %s, %v", body, err)
	}

	// ListActions names the membership actions after the wrapped server's (none here).
	stream, err := c.ListActions(ctx, &flight.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for {
		a, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, a.Type)
	}
	if strings.Join(types, ",") != ActionRegister+","+ActionHeartbeat {
		t.Errorf("ListActions = %v", types)
	}
}

// Concurrent registrations and heartbeats keep the table consistent (run with -race).
func TestMembershipConcurrent(t *testing.T) {
	m := NewMembership(Config{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := string(rune('a' + i))
			if _, err := m.Register(id, "h:1", "boot-"+id); err != nil {
				t.Error(err)
			}
			for range 100 {
				if err := m.Heartbeat(id); err != nil {
					t.Error(err)
				}
				_ = m.Nodes()
			}
		}()
	}
	wg.Wait()
	if got := states(m); got != "a=alive b=alive c=alive d=alive e=alive f=alive g=alive h=alive" {
		t.Errorf("states = %s", got)
	}
}

// refusingStore is a DatasetStore that fails the test if an action reaches it.
type refusingStore struct{ t *testing.T }

func (s refusingStore) Materialize(context.Context, MaterializeRequest) (PartitionStats, error) {
	s.t.Error("an unsigned materialize reached the store")
	return PartitionStats{}, nil
}
func (s refusingStore) DropDataset(string, uint64) { s.t.Error("an unsigned drop reached the store") }
func (s refusingStore) ReadPartition(context.Context, string, uint64, int, []int) (array.RecordReader, error) {
	return nil, errors.New("not held")
}

// A data node refuses dataset actions that are not signed with its cluster secret.
func TestNodeActionsNeedTheClusterSecret(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	flight.RegisterFlightServiceServer(srv, NodeActions(NodeConfig{ID: "n", Key: ticket.NewKeyring([]byte("k"), nil), Store: refusingStore{t}})(&flight.BaseFlightServer{}))
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	c := dial(t, lis.Addr().String())
	for _, a := range []string{ActionMaterialize, ActionDropPartitions} {
		_, err := DoAction(signAction(context.Background(), ticket.NewKeyring([]byte("not k"), nil), &flight.Action{Type: a, Body: []byte(`{}`)}), c, a, []byte(`{}`))
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s signed with another secret: %v, want UNAUTHENTICATED", a, err)
		}
	}
	// node-info stays open: it tells nothing a node's address does not.
	if _, err := DoAction(context.Background(), c, ActionNodeInfo, nil); err != nil {
		t.Errorf("node-info: %v", err)
	}
}

// dropHeartbeats is a head's Flight service that fails heartbeats while drop is set, as a
// network that loses them would.
type dropHeartbeats struct {
	flight.FlightServer
	drop    *atomic.Bool
	dropped *atomic.Int64
}

func (d dropHeartbeats) DoAction(a *flight.Action, s flight.FlightService_DoActionServer) error {
	if a.Type == ActionHeartbeat && d.drop.Load() {
		d.dropped.Add(1)
		return status.Error(codes.Unavailable, "heartbeat dropped")
	}
	return d.FlightServer.DoAction(a, s)
}

// An agent whose heartbeats stop reaching the head becomes suspect and, heard again, alive with
// nothing moved; lost, it registers again with the same boot ID and joins as a new member.
// The head's clock is fake: only the test moves it, so the states do not depend on how busy
// the machine is.
func TestAgentSuspectRecoversAndLostRegistersAgain(t *testing.T) {
	clock, log := newFakeClock(), &eventLog{}
	m := NewMembership(Config{HeartbeatInterval: testInterval, SuspectAfter: 3 * time.Second, LostAfter: 10 * time.Second, Now: clock.Now, OnChange: log.add})
	var (
		drop    atomic.Bool
		dropped atomic.Int64
	)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	flight.RegisterFlightServiceServer(srv, dropHeartbeats{NewActions(m, nil).Wrap(&flight.BaseFlightServer{}), &drop, &dropped})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	n := startNode(t, "n1", lis.Addr().String())
	waitStates(t, m, "n1=alive")

	// silence drops heartbeats, and moves the head's clock past d, checking each second, once
	// a heartbeat was dropped: the agent makes one call at a time, so none is accepted after.
	silence := func(d time.Duration) {
		drop.Store(true)
		seen := dropped.Load()
		for deadline := time.Now().Add(eventually); dropped.Load() == seen; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no heartbeat came to drop")
			}
		}
		for range d / time.Second {
			clock.Advance(time.Second)
			m.Check()
		}
	}
	silence(4 * time.Second)
	waitStates(t, m, "n1=suspect")
	drop.Store(false)
	waitStates(t, m, "n1=alive")

	silence(11 * time.Second)
	waitStates(t, m, "n1=lost")
	drop.Store(false)
	waitStates(t, m, "n1=alive")
	if got := m.Nodes()[0]; got.BootID != "boot-n1" || !got.RegisteredAt.Equal(clock.Now()) {
		t.Errorf("n1 after registering again = %+v, want boot ID boot-n1 registered now", got)
	}
	n.stopAgent(t)
	got := strings.Join(log.take(), "; ")
	want := "joined n1@" + n.addr + "; suspect n1@" + n.addr + "; recovered n1@" + n.addr + "; suspect n1@" + n.addr + "; lost n1@" + n.addr + "; joined n1@" + n.addr
	if got != want {
		t.Errorf("events = %s\nwant %s", got, want)
	}
}
