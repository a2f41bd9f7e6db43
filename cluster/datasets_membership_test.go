package cluster

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster/schedule"
)

// countingStore is a data node's DatasetStore that records the partitions it is asked to make.
type countingStore struct {
	mu   sync.Mutex
	made []string // "dataset/partition"
	// hang, when set, makes the node hang: each call is announced on it and then waits for its
	// context to end.
	hang chan string
}

func (s *countingStore) Materialize(ctx context.Context, req MaterializeRequest) (PartitionStats, error) {
	s.mu.Lock()
	hang := s.hang
	if hang == nil {
		s.made = append(s.made, req.Dataset+"/"+string(rune('0'+req.Partition)))
	}
	s.mu.Unlock()
	if hang != nil {
		select {
		case hang <- req.Dataset:
		case <-ctx.Done():
		}
		<-ctx.Done()
		return PartitionStats{}, ctx.Err()
	}
	return PartitionStats{Rows: 1, Bytes: 8}, nil
}
func (s *countingStore) DropDataset(string, uint64) {}
func (s *countingStore) ReadPartition(context.Context, string, uint64, int, []int) (array.RecordReader, error) {
	return nil, errors.New("not served in this test")
}

func (s *countingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.made)
}

// membershipRegistry is a head's dataset registry over data nodes that only count what they
// are asked to make, with the membership on a fake clock and probes that learn nothing.
type membershipRegistry struct {
	m      *Membership
	clock  *fakeClock
	d      *Datasets
	stores map[string]*countingStore
	addrs  map[string]string
}

func startMembershipRegistry(t *testing.T, ids ...string) *membershipRegistry {
	t.Helper()
	r := &membershipRegistry{clock: newFakeClock(), stores: map[string]*countingStore{}, addrs: map[string]string{}}
	r.m = NewMembership(Config{
		HeartbeatInterval: time.Second, SuspectAfter: tSuspect, LostAfter: tLost, Now: r.clock.Now,
		Probe: func(context.Context, string) ProbeResult { return ProbeUnknown },
	})
	r.d = NewDatasets(DatasetsConfig{Membership: r.m, Catalog: memcat.NewCatalog("mem"), Logger: quietLog})
	t.Cleanup(r.d.Close)
	for _, id := range ids {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		store := &countingStore{}
		srv := grpc.NewServer()
		flight.RegisterFlightServiceServer(srv, NodeActions(NodeConfig{ID: id, Store: store})(&flight.BaseFlightServer{}))
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(srv.Stop)
		r.stores[id], r.addrs[id] = store, lis.Addr().String()
		if _, err := r.m.Register(id, r.addrs[id], "boot-"+id); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func (r *membershipRegistry) create(t *testing.T, name string, parts int) DatasetInfo {
	t.Helper()
	job := DatasetJob{Name: name, SQL: "SELECT 1", ResultSchema: arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)}
	for range parts {
		job.Parts = append(job.Parts, PartSpec{Whole: true, Bytes: 100})
	}
	info, err := r.d.Create(context.Background(), job, nil)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// made counts, per node, the partitions it was asked to make: "a=2 b=2 c=2".
func (r *membershipRegistry) made() string {
	var out []string
	for id, s := range r.stores {
		out = append(out, id+"="+string(rune('0'+s.count())))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// waitReady polls until the dataset is ready on exactly the given nodes.
func (r *membershipRegistry) waitReady(t *testing.T, name string, nodes ...string) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for {
		info, ok := r.d.Lookup(name)
		if ok && info.State == DatasetReady && slices.Equal(info.Nodes, nodes) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %+v, want ready on %v", name, info, nodes)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Only a loss or a restart moves partitions: a suspect node keeps what it holds (and gets no
// new partitions), and is used again when it recovers; a lost node's partitions are made on
// the others, and so are those of a node that registers with a new boot ID.
func TestDatasetsMoveOnlyOnLoss(t *testing.T) {
	r := startMembershipRegistry(t, "a", "b", "c")
	if info := r.create(t, "d1", 6); !slices.Equal(info.Nodes, []string{"a", "b", "c"}) {
		t.Fatalf("d1 on %v, want a, b and c", info.Nodes)
	}
	if got := r.made(); got != "a=2 b=2 c=2" {
		t.Fatalf("made %s", got)
	}

	// c goes silent: suspect. Nothing moves, and a new dataset avoids it.
	for range 4 {
		tick(t, r.m, r.clock, "a", "b")
	}
	if got := states(r.m); got != "a=alive b=alive c=suspect" {
		t.Fatalf("states %s", got)
	}
	if info := r.create(t, "d2", 4); !slices.Equal(info.Nodes, []string{"a", "b"}) {
		t.Errorf("d2 on %v while c is suspect, want a and b", info.Nodes)
	}
	if got := r.made(); got != "a=4 b=4 c=2" {
		t.Errorf("made %s while c is suspect, want only d2's partitions on a and b", got)
	}
	r.waitReady(t, "d1", "a", "b", "c")

	// c heartbeats again: alive, still holding its partitions of d1; nothing is made.
	tick(t, r.m, r.clock, "a", "b", "c")
	if got := states(r.m); got != "a=alive b=alive c=alive" {
		t.Fatalf("states %s", got)
	}
	// The same process registering again (a retried registration) moves nothing either.
	if _, err := r.m.Register("c", r.addrs["c"], "boot-c"); err != nil {
		t.Fatal(err)
	}
	r.waitReady(t, "d1", "a", "b", "c")
	if got := r.made(); got != "a=4 b=4 c=2" {
		t.Errorf("made %s after c recovered, want nothing new", got)
	}

	// b restarts (a new boot ID): what it held is made again, on any alive node.
	if _, err := r.m.Register("b", r.addrs["b"], "boot-b2"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(eventually)
	for r.made() == "a=4 b=4 c=2" || !ready(r.d, "d1") || !ready(r.d, "d2") {
		if time.Now().After(deadline) {
			t.Fatalf("b's partitions were not made again after its restart: made %s", r.made())
		}
		time.Sleep(5 * time.Millisecond)
	}
	total := 0
	for _, s := range r.stores {
		total += s.count()
	}
	if total != 10+4 { // b held 2 partitions of d1 and 2 of d2
		t.Errorf("made %s after b restarted, want its 4 partitions made again", r.made())
	}

	// c goes silent for longer than LostAfter: lost, its partitions are made on a and b.
	for range 11 {
		tick(t, r.m, r.clock, "a", "b")
	}
	if got := states(r.m); got != "a=alive b=alive c=lost" {
		t.Fatalf("states %s", got)
	}
	r.waitReady(t, "d1", "a", "b")
	before := r.made()
	// c registers again (same process): it joins holding nothing the head counts on; nothing
	// is made again, and d1 stays where it was rebuilt.
	if _, err := r.m.Register("c", r.addrs["c"], "boot-c"); err != nil {
		t.Fatal(err)
	}
	r.waitReady(t, "d1", "a", "b")
	if got := r.made(); got != before {
		t.Errorf("made %s after lost c registered again, was %s", got, before)
	}
}

func ready(d *Datasets, name string) bool {
	info, ok := d.Lookup(name)
	return ok && info.State == DatasetReady
}

// The registry hands node states to the scheduler as they are: the names must be the same.
func TestSchedulerStatesAreMembershipStates(t *testing.T) {
	for c, s := range map[State]schedule.State{StateAlive: schedule.Alive, StateSuspect: schedule.Suspect, StateLost: schedule.Lost} {
		if scheduleNode(Node{State: c}).State != s {
			t.Errorf("membership state %q is not the scheduler's %q", c, s)
		}
	}
}

// A node lost only because it was cut off comes back as the same process, its memory intact:
// what it held and nobody has made again yet is read there again, and nothing is made.
func TestDatasetsUseAgainWhatTheSameProcessStillHolds(t *testing.T) {
	r := startMembershipRegistry(t, "a")
	r.create(t, "d", 2)
	for range 11 {
		tick(t, r.m, r.clock)
	}
	if got := states(r.m); got != "a=lost" {
		t.Fatalf("states %s", got)
	}
	if info, _ := r.d.Lookup("d"); info.State != DatasetRebuilding || len(info.Nodes) != 0 {
		t.Fatalf("d after its only node was lost: %+v", info)
	}
	// The rebuild finds no node and waits to retry; a registers again as the same process.
	deadline := time.Now().Add(eventually)
	for !rebuildRunning() {
		if time.Now().After(deadline) {
			t.Fatal("no rebuild runs after the loss")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := r.m.Register("a", r.addrs["a"], "boot-a"); err != nil {
		t.Fatal(err)
	}
	r.waitReady(t, "d", "a")
	for rebuildRunning() {
		if time.Now().After(deadline) {
			t.Fatal("the rebuild still runs with every partition held")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := r.made(); got != "a=2" {
		t.Errorf("made %s, want only the first 2 partitions", got)
	}
	for i, p := range r.d.entries[keyOf(mustDataset(t, r.d, "d"))].ds.Parts() {
		if p.Location != r.addrs["a"] || p.Fetch == nil {
			t.Errorf("partition %d is not read from a again: %+v", i, p)
		}
	}
}

func mustDataset(t *testing.T, d *Datasets, name string) *memcat.Dataset {
	t.Helper()
	ds, ok := d.cfg.Catalog.Dataset(name)
	if !ok {
		t.Fatalf("no dataset %s", name)
	}
	return ds
}
