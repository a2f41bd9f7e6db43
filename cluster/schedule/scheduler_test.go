package schedule

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func node(id string, st State) Node {
	return Node{ID: id, Addr: "h:" + id, BootID: "boot-" + id, State: st}
}

func alive(ids ...string) []Node {
	var out []Node
	for _, id := range ids {
		out = append(out, node(id, Alive))
	}
	return out
}

// owners shows who holds each partition of k: "a a b -" ("-": nobody).
func owners(s *Scheduler, k Key) string {
	var out []string
	for _, n := range s.Owners(k) {
		out = append(out, orDash(n.ID))
	}
	return strings.Join(out, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// targets shows where makes go, by partition: "0:a 1:b".
func targets(makes []Make) string {
	var out []string
	for _, m := range makes {
		out = append(out, string(rune('0'+m.Partition))+":"+m.Node.ID)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// made plans k on nodes and reports every make done.
func made(t *testing.T, s *Scheduler, k Key, nodes []Node) []Make {
	t.Helper()
	makes, err := s.Plan(k, nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range makes {
		if !s.Done(m) {
			t.Fatalf("make %+v was stale", m)
		}
	}
	return makes
}

func evenBytes(n int) []int64 { return slices.Repeat([]int64{100}, n) }

func TestPlanPlacesByLoad(t *testing.T) {
	for _, tt := range []struct {
		name    string
		nodes   []Node
		bytes   []int64
		before  []int64 // an earlier dataset, made on the same nodes first
		want    string  // owners after the plan is carried out
		wantErr string
	}{
		{name: "spread over the alive nodes", nodes: alive("a", "b", "c"), bytes: evenBytes(6), want: "a b c a b c"},
		{name: "largest first, each to the least loaded", nodes: alive("a", "b"), bytes: []int64{10, 50, 30, 20}, want: "a a b b"},
		{name: "a suspect node gets nothing new", nodes: []Node{node("a", Alive), node("b", Suspect), node("c", Alive)}, bytes: evenBytes(4), want: "a c a c"},
		{name: "a lost node gets nothing", nodes: []Node{node("a", Lost), node("b", Alive)}, bytes: evenBytes(2), want: "b b"},
		{name: "only suspect nodes: placed on them rather than refused", nodes: []Node{node("a", Suspect), node("b", Lost)}, bytes: evenBytes(2), want: "a a"},
		{name: "no node", nodes: []Node{node("a", Lost)}, bytes: evenBytes(2), wantErr: `no data node is alive to hold dataset "d"`},
		{name: "the dataset spreads first, the totals break ties", nodes: alive("a", "b", "c"), before: []int64{500, 400}, bytes: evenBytes(2), want: "c b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			if tt.before != nil {
				made(t, s, s.Add("before", t0, tt.before), tt.nodes)
			}
			k := s.Add("d", t0, tt.bytes)
			makes, err := s.Plan(k, tt.nodes)
			if tt.wantErr != "" {
				if errs.CategoryOf(err) != errs.Unavailable || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Plan err = %v, want Unavailable %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := owners(s, k); got != strings.Repeat("- ", len(tt.bytes)-1)+"-" {
				t.Errorf("owners before any make is done: %s", got)
			}
			for _, m := range makes {
				s.Done(m)
			}
			if got := owners(s, k); got != tt.want {
				t.Errorf("owners %s, want %s", got, tt.want)
			}
			if again, err := s.Plan(k, tt.nodes); again != nil || err != nil {
				t.Errorf("a second plan = %v, %v; want nothing", again, err)
			}
		})
	}
}

// A membership change moves data only when a process is gone: lost, or replaced by a restart.
func TestObserveMovesOnlyLostData(t *testing.T) {
	for _, tt := range []struct {
		name   string
		events []Node
		// want: owners after the events; rebuild: Plan's targets for the waiting partitions
		// on the alive nodes, in the state after the events.
		want, unowned, reowned, rebuild string
		// driver: a rebuild was asked for (Change.Rebuild)
		driver bool
	}{
		{name: "suspect: keeps everything", events: []Node{node("c", Suspect)},
			want: "a b c a b c"},
		{name: "suspect then recovered: keeps everything", events: []Node{node("c", Suspect), node("c", Alive)},
			want: "a b c a b c"},
		{name: "the same process registering again: nothing moves", events: []Node{node("c", Alive)},
			want: "a b c a b c"},
		{name: "lost: its partitions wait, and go to every survivor", events: []Node{node("c", Lost)},
			want: "a b - a b -", unowned: "2 5", rebuild: "2:a 5:b", driver: true},
		{name: "a new boot id: the old process is lost", events: []Node{node("c", Lost), {ID: "c", Addr: "h:c", BootID: "boot-c2", State: Alive}},
			want: "a b - a b -", unowned: "2 5", rebuild: "2:a 5:b", driver: true},
		{name: "a new boot id without the loss seen first: lost all the same", events: []Node{{ID: "c", Addr: "h:c", BootID: "boot-c2", State: Alive}},
			want: "a b - a b -", unowned: "2 5", rebuild: "2:a 5:b", driver: true},
		{name: "another address: another process", events: []Node{{ID: "c", Addr: "h:c2", BootID: "boot-c", State: Alive}},
			want: "a b - a b -", unowned: "2 5", rebuild: "2:a 5:b", driver: true},
		{name: "lost, then the same process returns: its partitions are used again", events: []Node{node("c", Lost), node("c", Alive)},
			want: "a b c a b c", unowned: "2 5", reowned: "2:c 5:c", driver: true},
		{name: "two lost: everything on the survivor", events: []Node{node("b", Lost), node("c", Lost)},
			want: "a - - a - -", unowned: "1 4 2 5", rebuild: "1:a 2:a 4:a 5:a", driver: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			nodes := alive("a", "b", "c")
			k := s.Add("d", t0, evenBytes(6))
			made(t, s, k, nodes)
			if s.Release(k) {
				t.Fatal("Release after every partition was made asks for more")
			}
			var unowned []string
			var reowned []Make
			var rebuild []Key
			for _, ev := range tt.events {
				ch := s.Observe(ev)
				for _, u := range ch.Unowned {
					unowned = append(unowned, string(rune('0'+u.Partition)))
				}
				reowned = append(reowned, ch.Reowned...)
				rebuild = append(rebuild, ch.Rebuild...)
				for i, n := range nodes {
					if n.ID == ev.ID {
						nodes[i] = ev
					}
				}
			}
			if got := owners(s, k); got != tt.want {
				t.Errorf("owners %s, want %s", got, tt.want)
			}
			if got := strings.Join(unowned, " "); got != tt.unowned {
				t.Errorf("unowned %s, want %s", got, tt.unowned)
			}
			if got := targets(reowned); got != tt.reowned {
				t.Errorf("reowned %s, want %s", got, tt.reowned)
			}
			if tt.driver != slices.Equal(rebuild, []Key{k}) {
				t.Errorf("rebuild %v", rebuild)
			}
			makes, err := s.Plan(k, alive("a", "b"))
			if err != nil {
				t.Fatal(err)
			}
			if got := targets(makes); got != tt.rebuild {
				t.Errorf("rebuild makes %s, want %s", got, tt.rebuild)
			}
		})
	}
}

// A suspect node takes no new partitions and loses none; once it recovers it takes new ones.
func TestSuspectNodeKeepsItsPartitions(t *testing.T) {
	s := New()
	nodes := alive("a", "b", "c")
	d1 := s.Add("d1", t0, evenBytes(3))
	made(t, s, d1, nodes)
	nodes[2] = node("c", Suspect)
	if ch := s.Observe(nodes[2]); len(ch.Unowned)+len(ch.Reowned)+len(ch.Rebuild) != 0 {
		t.Fatalf("suspect changed %+v", ch)
	}
	d2 := s.Add("d2", t0, evenBytes(4))
	made(t, s, d2, nodes)
	if got := owners(s, d2); got != "a b a b" {
		t.Errorf("d2 made while c is suspect on %s", got)
	}
	nodes[2] = node("c", Alive)
	s.Observe(nodes[2])
	d3 := s.Add("d3", t0, evenBytes(3))
	made(t, s, d3, nodes)
	if got := owners(s, d1) + " | " + owners(s, d3); got != "a b c | c a b" {
		t.Errorf("after c recovered: d1 | d3 = %s", got)
	}
}

// The process that comes back takes its partitions back even while they are being made
// elsewhere; that make's outcome is then stale.
func TestReturningProcessOvertakesARebuild(t *testing.T) {
	s := New()
	k := s.Add("d", t0, evenBytes(2))
	made(t, s, k, alive("a", "b"))
	s.Release(k)
	ch := s.Observe(node("b", Lost))
	if !slices.Equal(ch.Rebuild, []Key{k}) {
		t.Fatalf("rebuild %v", ch.Rebuild)
	}
	makes, err := s.Plan(k, alive("a"))
	if err != nil || targets(makes) != "1:a" {
		t.Fatalf("rebuild plan %s, %v", targets(makes), err)
	}
	if ch := s.Observe(node("b", Alive)); targets(ch.Reowned) != "1:b" {
		t.Fatalf("reowned %s", targets(ch.Reowned))
	}
	if s.Done(makes[0]) {
		t.Error("the overtaken rebuild counted")
	}
	if got := owners(s, k); got != "a b" {
		t.Errorf("owners %s", got)
	}
	if s.Release(k) {
		t.Error("Release asks for more with every partition held")
	}
}

// Without a boot ID a process cannot be told from the next one: nothing is used again.
func TestNoBootIDNothingUsedAgain(t *testing.T) {
	s := New()
	b := Node{ID: "b", Addr: "h:b", State: Alive}
	k := s.Add("d", t0, evenBytes(2))
	made(t, s, k, []Node{node("a", Alive), b})
	lost := b
	lost.State = Lost
	s.Observe(lost)
	if ch := s.Observe(b); len(ch.Reowned) != 0 {
		t.Errorf("reowned %v without a boot id", ch.Reowned)
	}
	if got := owners(s, k); got != "a -" {
		t.Errorf("owners %s", got)
	}
}

func TestFailedRetriesOnAnotherNode(t *testing.T) {
	for _, tt := range []struct {
		name      string
		nodeFault bool
		nodes     []Node
		failures  int    // consecutive node faults reported
		want      string // the last verdict's target, or "give up"
	}{
		{name: "a node fault moves to another node", nodeFault: true, nodes: alive("a", "b", "c"), failures: 1, want: "b"},
		{name: "then to a third", nodeFault: true, nodes: alive("a", "b", "c"), failures: 2, want: "c"},
		{name: "at most MaxAttempts nodes a round", nodeFault: true, nodes: alive("a", "b", "c", "d"), failures: MaxAttempts, want: "give up"},
		{name: "no node left untried", nodeFault: true, nodes: alive("a", "b"), failures: 2, want: "give up"},
		{name: "never to a suspect node while one is alive", nodeFault: true, nodes: []Node{node("a", Alive), node("b", Suspect)}, failures: 1, want: "give up"},
		{name: "the query's fault is not retried", nodeFault: false, nodes: alive("a", "b"), failures: 1, want: "give up"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			k := s.Add("d", t0, evenBytes(1))
			makes, err := s.Plan(k, tt.nodes)
			if err != nil || len(makes) != 1 || makes[0].Node.ID != "a" {
				t.Fatalf("plan %v, %v", makes, err)
			}
			m, got := makes[0], ""
			for range tt.failures {
				next, v := s.Failed(m, tt.nodeFault, tt.nodes)
				switch v {
				case Retry:
					if next.Node.ID == m.Node.ID || next.Attempt == m.Attempt {
						t.Fatalf("retry %+v after %+v", next, m)
					}
					m, got = next, next.Node.ID
				case GiveUp:
					got = "give up"
				default:
					t.Fatalf("verdict %v", v)
				}
			}
			if got != tt.want {
				t.Fatalf("after %d failures: %s, want %s", tt.failures, got, tt.want)
			}
			if got == "give up" {
				if s.Done(m) {
					t.Error("a make given up still counted")
				}
				if !s.Release(k) {
					t.Error("Release after giving up does not ask for more")
				}
				// The next round avoids the nodes that failed while others remain.
				again, err := s.Plan(k, alive("a", "b", "c", "d"))
				if err != nil || len(again) != 1 || slices.ContainsFunc(tt.nodes[:tt.failures], func(n Node) bool { return n.ID == again[0].Node.ID }) {
					t.Errorf("next round %v, %v; tried %v", again, err, tt.nodes[:tt.failures])
				}
			}
		})
	}
}

func TestStaleOutcomes(t *testing.T) {
	s := New()
	k := s.Add("d", t0, evenBytes(2))
	makes, err := s.Plan(k, alive("a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	// b is lost while it makes partition 1: its success does not count, and the partition
	// waits for the next round, which avoids b.
	s.Observe(node("b", Lost))
	if s.Done(makes[1]) {
		t.Error("a make on a lost node counted")
	}
	if _, v := s.Failed(makes[1], true, alive("a")); v != Stale {
		t.Errorf("failure of an overtaken make: %v, want Stale", v)
	}
	if !s.Done(makes[0]) {
		t.Error("the make on a did not count")
	}
	again, err := s.Plan(k, []Node{node("a", Alive), node("b", Alive)})
	if err != nil || targets(again) != "1:a" {
		t.Errorf("next round %s, %v; want 1:a (b's process was seen lost)", targets(again), err)
	}
	// Removed: every outcome is stale and nothing waits.
	s.Remove(k)
	if s.Done(again[0]) || s.Release(k) || s.Owners(k) != nil {
		t.Error("a removed dataset still counts outcomes")
	}
	if makes, err := s.Plan(k, alive("a")); makes != nil || err != nil {
		t.Errorf("plan of a removed dataset: %v, %v", makes, err)
	}
}

// A dataset has one driver at a time: a loss while it is driven (being created, or rebuilt)
// is left to that driver, which learns of it from Release.
func TestOneDriverPerDataset(t *testing.T) {
	s := New()
	k := s.Add("d", t0, evenBytes(2))
	made(t, s, k, alive("a", "b"))
	if ch := s.Observe(node("b", Lost)); len(ch.Rebuild) != 0 || len(ch.Unowned) != 1 {
		t.Fatalf("loss while the creator drives: %+v", ch)
	}
	if !s.Release(k) {
		t.Fatal("Release hides the waiting partition from the creator")
	}
	made(t, s, k, alive("a"))
	if s.Release(k) {
		t.Fatal("Release after the rebuild asks for more")
	}
	s.Observe(node("c", Alive))
	if ch := s.Observe(node("a", Lost)); !slices.Equal(ch.Rebuild, []Key{k}) {
		t.Fatalf("loss with no driver: rebuild %v", ch.Rebuild)
	}
	if ch := s.Observe(node("c", Lost)); len(ch.Rebuild) != 0 {
		t.Errorf("a second loss started a second driver: %v", ch.Rebuild)
	}
}

// A node snapshot older than the changes observed must not place work on a process known gone.
func TestPlanSkipsProcessesSeenGone(t *testing.T) {
	s := New()
	s.Observe(Node{ID: "b", Addr: "h:b", BootID: "boot-b2", State: Alive})
	k := s.Add("d", t0, evenBytes(2))
	makes, err := s.Plan(k, alive("a", "b", "c")) // b is boot-b there: replaced
	if err != nil || targets(makes) != "0:a 1:c" {
		t.Errorf("plan %s, %v; want a and c", targets(makes), err)
	}
}

func TestGenerationsIncrease(t *testing.T) {
	s := New()
	a := s.Add("d", t0, nil)
	b := s.Add("d", t0, nil)
	c := s.Add("d", t0.Add(-time.Hour), nil)
	if a.Generation != uint64(t0.UnixNano()) || b.Generation != a.Generation+1 || c.Generation != b.Generation+1 {
		t.Errorf("generations %d %d %d", a.Generation, b.Generation, c.Generation)
	}
}

// A driver that died leaves makes without outcomes: its next round, or the next driver after
// Abandon, places those partitions again.
func TestAbandonedMakesArePlacedAgain(t *testing.T) {
	s := New()
	k := s.Add("d", t0, evenBytes(2))
	first, err := s.Plan(k, alive("a", "b"))
	if err != nil || len(first) != 2 {
		t.Fatalf("plan %v, %v", first, err)
	}
	s.Done(first[0])
	again, err := s.Plan(k, alive("a", "b"))
	if err != nil || len(again) != 1 || again[0].Partition != first[1].Partition {
		t.Fatalf("the next round %v, %v; want partition %d again", again, err, first[1].Partition)
	}
	if s.Done(first[1]) {
		t.Error("the abandoned make counted")
	}
	s.Abandon(k)
	if ch := s.Observe(node("c", Alive)); !slices.Equal(ch.Rebuild, []Key{k}) {
		t.Errorf("after Abandon the next change asks for driver %v", ch.Rebuild)
	}
	if s.Done(again[0]) {
		t.Error("a make of an abandoned drive counted")
	}
}

// A fixed dataset (rows from a client, no source) is made like any other while its driver has
// the rows, a loss then included; once fixed, a lost holder's partitions are lost, never
// placed again nor returned to be rebuilt, and the very process coming back holds them again.
func TestFixedDatasetLosesWhatALostNodeHeld(t *testing.T) {
	s := New()
	k := s.Add("d", t0, evenBytes(4))
	made(t, s, k, alive("a", "b"))
	// Lost before it is fixed: waiting, made again by its driver.
	if ch := s.Observe(node("b", Lost)); len(ch.Lost) != 0 || len(ch.Unowned) != 2 || len(ch.Rebuild) != 0 {
		t.Fatalf("loss while driven: %+v", ch)
	}
	if !s.Release(k) {
		t.Fatal("Release with partitions waiting must keep the driver")
	}
	made(t, s, k, alive("a", "c"))
	if s.Release(k) {
		t.Fatal("Release with every partition held")
	}
	s.Fix(k)
	before := owners(s, k)
	if before != "a c a c" {
		t.Fatalf("owners %s", before)
	}
	ch := s.Observe(node("c", Lost))
	if len(ch.Unowned) != 0 || len(ch.Rebuild) != 0 {
		t.Errorf("a fixed dataset's loss asked for a rebuild: %+v", ch)
	}
	if len(ch.Lost) != 2 || ch.Lost[0] != (PartRef{k, 1}) || ch.Lost[1] != (PartRef{k, 3}) {
		t.Errorf("lost %v, want partitions 1 and 3", ch.Lost)
	}
	if got := s.Lost(k); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("Lost = %v", got)
	}
	if got := owners(s, k); got != "a - a -" {
		t.Errorf("owners %s", got)
	}
	if makes, err := s.Plan(k, alive("a", "d")); err != nil || len(makes) != 0 {
		t.Errorf("a lost partition was placed again: %s, %v", targets(makes), err)
	}
	if ch := s.Observe(node("d", Alive)); len(ch.Rebuild) != 0 {
		t.Errorf("a new node asked for a rebuild: %+v", ch)
	}
	// Another process under the same ID holds nothing.
	restarted := node("c", Alive)
	restarted.BootID = "boot-c2"
	if ch := s.Observe(restarted); len(ch.Reowned) != 0 {
		t.Errorf("a restarted process reowned %s", targets(ch.Reowned))
	}
	// The very process that held them (it was only cut off) holds them again.
	if ch := s.Observe(node("c", Alive)); targets(ch.Reowned) != "1:c 3:c" {
		t.Errorf("reowned %s", targets(ch.Reowned))
	}
	if got := s.Lost(k); got != nil {
		t.Errorf("Lost after the holder came back = %v", got)
	}
	if got := owners(s, k); got != before {
		t.Errorf("owners %s, want %s", got, before)
	}
}
