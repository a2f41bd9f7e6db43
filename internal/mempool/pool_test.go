package mempool

import (
	"bufio"
	"strings"
	"sync"
	"testing"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestReservationsCountAndRefuseAtTheLimit(t *testing.T) {
	p := New(1000)
	a := p.Reserve(Consumer{Name: "dataset partitions"})
	if err := a.TryGrow(600); err != nil {
		t.Fatal(err)
	}
	b := p.Reserve(Consumer{Name: "hash join"})
	err := b.TryGrow(500)
	if errs.CategoryOf(err) != errs.ResourceExhausted {
		t.Fatalf("grow past the limit: %v", err)
	}
	if !strings.Contains(err.Error(), "1000 B") || !strings.Contains(err.Error(), "hash join") {
		t.Errorf("the error names neither the limit nor the consumer: %v", err)
	}
	if b.Size() != 0 || p.Stats().Reserved != 600 {
		t.Errorf("a refused grow changed something: %d, %+v", b.Size(), p.Stats())
	}
	if err := b.TryGrow(400); err != nil {
		t.Fatal(err)
	}
	a.Shrink(100)
	if err := b.Resize(500); err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	if s.Reserved != 1000 || s.Peak != 1000 || s.Refusals != 1 || len(s.Consumers) != 2 {
		t.Fatalf("stats: %+v", s)
	}
	a.Free()
	a.Free()
	b.Free()
	if s := p.Stats(); s.Reserved != 0 || len(s.Consumers) != 0 {
		t.Errorf("after freeing everything: %+v", s)
	}
	if err := a.TryGrow(1); errs.CategoryOf(err) != errs.Internal {
		t.Errorf("growing a freed reservation: %v", err)
	}
}

func TestSpillableConsumersShareWhatIsLeft(t *testing.T) {
	p := New(1000)
	fixed := p.Reserve(Consumer{Name: "dataset partitions"})
	if err := fixed.TryGrow(400); err != nil {
		t.Fatal(err)
	}
	s1 := p.Reserve(Consumer{Name: "sort", Spillable: true})
	if err := s1.TryGrow(600); err != nil {
		t.Fatalf("the only spiller may take all that is left: %v", err)
	}
	s1.Shrink(600)
	s2 := p.Reserve(Consumer{Name: "sort", Spillable: true})
	if err := s1.TryGrow(301); errs.CategoryOf(err) != errs.ResourceExhausted {
		t.Fatalf("a spiller past its half of 600: %v", err)
	}
	if err := s1.TryGrow(300); err != nil {
		t.Fatal(err)
	}
	if err := s2.TryGrow(300); err != nil {
		t.Fatal(err)
	}
	s2.Free()
	if err := s1.TryGrow(300); err != nil {
		t.Fatalf("alone again, the spiller takes the rest: %v", err)
	}
}

func TestGroupLimitsOneQuery(t *testing.T) {
	p := New(0)
	q := p.Group("this query", 100)
	r := q.Reserve(Consumer{Name: "sort"})
	if err := r.TryGrow(100); err != nil {
		t.Fatal(err)
	}
	err := q.Reserve(Consumer{Name: "hash aggregate"}).TryGrow(1)
	if errs.CategoryOf(err) != errs.ResourceExhausted || !strings.Contains(err.Error(), "this query") {
		t.Fatalf("past the query's limit: %v", err)
	}
	if err := p.Reserve(Consumer{Name: "other"}).TryGrow(1 << 40); err != nil {
		t.Fatalf("an unlimited pool refused: %v", err)
	}
	r.Free()
	if q.Reserved() != 0 {
		t.Errorf("group holds %d after free", q.Reserved())
	}
}

func TestReclaimerIsAskedBeforeARefusal(t *testing.T) {
	p := New(1000)
	held := p.Reserve(Consumer{Name: "dataset partitions"})
	if err := held.TryGrow(900); err != nil {
		t.Fatal(err)
	}
	var asked int64
	p.SetReclaimer(func(need int64) int64 {
		asked = need
		held.Shrink(need)
		return need
	})
	r := p.Reserve(Consumer{Name: "sort"})
	if err := r.TryGrow(300); err != nil {
		t.Fatalf("reclaim should have made room: %v", err)
	}
	if asked != 200 || held.Size() != 700 {
		t.Errorf("asked %d, held %d", asked, held.Size())
	}
	p.SetReclaimer(func(int64) int64 { return 0 })
	if err := r.TryGrow(1); errs.CategoryOf(err) != errs.ResourceExhausted {
		t.Errorf("nothing reclaimed, still granted: %v", err)
	}
}

// TestEvictorsAreAskedBeforeTheReclaimer: a cache's evictor frees what it can first; the
// reclaimer is asked only for the rest, and a removed evictor is asked no more.
func TestEvictorsAreAskedBeforeTheReclaimer(t *testing.T) {
	p := New(1000)
	cached := p.Reserve(Consumer{Name: "cache"})
	parts := p.Reserve(Consumer{Name: "partitions"})
	if err := cached.TryGrow(100); err != nil {
		t.Fatal(err)
	}
	if err := parts.TryGrow(900); err != nil {
		t.Fatal(err)
	}
	var order []string
	remove := p.AddEvictor(func(need int64) int64 {
		order = append(order, "evictor")
		n := min(need, cached.Size())
		cached.Shrink(n)
		return n
	})
	var reclaimAsked int64
	p.SetReclaimer(func(need int64) int64 {
		order = append(order, "reclaimer")
		reclaimAsked = need
		parts.Shrink(need)
		return need
	})
	r := p.Reserve(Consumer{Name: "sort"})
	if err := r.TryGrow(50); err != nil {
		t.Fatal(err)
	}
	if cached.Size() != 50 || parts.Size() != 900 || len(order) != 1 {
		t.Fatalf("50 short: cache holds %d, partitions %d, asked %v; want only the evictor asked", cached.Size(), parts.Size(), order)
	}
	if err := r.TryGrow(150); err != nil {
		t.Fatal(err)
	}
	if cached.Size() != 0 || reclaimAsked != 100 || parts.Size() != 800 || order[1] != "evictor" || order[2] != "reclaimer" {
		t.Fatalf("150 short: cache %d, partitions %d, reclaimer asked for %d, order %v", cached.Size(), parts.Size(), reclaimAsked, order)
	}
	remove()
	order = nil
	if err := r.TryGrow(700); err != nil {
		t.Fatal(err)
	}
	if len(order) != 1 || order[0] != "reclaimer" {
		t.Errorf("after the evictor was removed, asked %v", order)
	}
}

func TestConcurrentReservationsBalance(t *testing.T) {
	p := New(1 << 20)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			r := p.Reserve(Consumer{Name: "sort", Spillable: true})
			for range 1000 {
				if r.TryGrow(64) == nil {
					r.Shrink(32)
				}
			}
			r.Free()
		})
	}
	wg.Wait()
	if s := p.Stats(); s.Reserved != 0 || len(s.Consumers) != 0 {
		t.Errorf("after all consumers freed: %+v", s)
	}
}

func TestLimitParsing(t *testing.T) {
	for in, want := range map[string]int64{"256MiB": 256 << 20, "1GiB": 1 << 30, "1073741824": 1 << 30, "512MB": 512e6, "0": 0} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := ParseBytes("lots"); err == nil {
		t.Error("ParseBytes accepted lots")
	}
	if n, ok := parseCgroupLimit("max\n"); ok || n != 0 {
		t.Error("max is no limit")
	}
	if n, ok := parseCgroupLimit("268435456\n"); !ok || n != 256<<20 {
		t.Errorf("cgroup limit: %d", n)
	}
	if _, ok := parseCgroupLimit("9223372036854771712"); ok {
		t.Error("cgroup v1's huge value is no limit")
	}
	if n := parseMemTotal(bufio.NewScanner(strings.NewReader("MemTotal:       24576000 kB\nMemFree: 1 kB\n"))); n != 24576000*1024 {
		t.Errorf("MemTotal: %d", n)
	}
	if DefaultLimit() <= 0 {
		t.Error("no default limit on this machine")
	}
}

// TestEvictorsRaiseTheFairShare: a spiller refused its fair share gets it once an evictor gives
// back unspillable memory (a cache), without the reclaimer being asked.
func TestEvictorsRaiseTheFairShare(t *testing.T) {
	p := New(1000)
	cached := p.Reserve(Consumer{Name: "cache"})
	if err := cached.TryGrow(400); err != nil {
		t.Fatal(err)
	}
	a := p.Reserve(Consumer{Name: "sort", Spillable: true})
	b := p.Reserve(Consumer{Name: "hash join", Spillable: true}) // the other spiller: shares are halves
	defer b.Free()
	p.SetReclaimer(func(int64) int64 { t.Error("the reclaimer was asked for a fair share"); return 0 })
	if err := a.TryGrow(301); errs.CategoryOf(err) != errs.ResourceExhausted {
		t.Fatalf("301 of a share of 300 with no evictor: %v, want refused", err)
	}
	p.AddEvictor(func(need int64) int64 {
		n := min(need, cached.Size())
		cached.Shrink(n)
		return n
	})
	if err := a.TryGrow(350); err != nil {
		t.Fatalf("350 once the cache gives way: %v", err)
	}
	if want := int64(400 - 2*(350-300)); cached.Size() != want {
		t.Errorf("cache holds %d, want %d: as much as the share needed", cached.Size(), want)
	}
}
