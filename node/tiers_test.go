package node

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
)

var tierTestSchema = arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)

// tierTestBatches holds rows int64 values from..from+rows-1 (8 bytes a row).
func tierTestBatches(from, rows int64) []arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, tierTestSchema)
	defer b.Release()
	for i := range rows {
		b.Field(0).(*array.Int64Builder).Append(from + i)
	}
	return []arrow.RecordBatch{b.NewRecordBatch()}
}

// handClock is a clock tests move by hand.
type handClock struct{ t time.Time }

func (c *handClock) now() time.Time          { return c.t }
func (c *handClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// newTestTiers returns tiers over a pool of limit bytes, with a disk tier in a test directory
// limited to diskLimit (0: free space), on a fake clock.
func newTestTiers(t *testing.T, limit, diskLimit int64) (*Tiers, *handClock) {
	t.Helper()
	s, err := NewTiers(TiersConfig{Pool: mempool.New(limit), DiskDir: t.TempDir(), DiskLimit: diskLimit})
	if err != nil {
		t.Fatal(err)
	}
	clock := &handClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.now = clock.now
	t.Cleanup(s.Close)
	return s, clock
}

// holdTest holds a partition named name of rows rows made by requests scan tasks.
func holdTest(t *testing.T, s *Tiers, clock *handClock, name string, rows, requests int64, pinned bool) (*heldPart, error) {
	t.Helper()
	data := memcat.NewPartData(tierTestSchema, tierTestBatches(0, rows))
	data.SetClock(clock.now)
	h := &heldPart{dataset: name, data: data, requests: requests, pinned: pinned}
	return h, s.hold(h)
}

func readTest(t *testing.T, h *heldPart, times int) {
	t.Helper()
	for range times {
		_, release, err := h.data.Open(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
}

func tiersOf(hs ...*heldPart) string {
	out := ""
	for _, h := range hs {
		out += fmt.Sprintf("%s:%s ", h.dataset, h.data.Tier())
	}
	return out
}

// When memory is short, the partitions with the lowest score move to disk first: cold ones
// that are cheap to make again before hot ones, and those before cold ones that cost many
// object-store requests to make again. Their memory goes back to the pool.
func TestPartitionsMoveToDiskColdAndCheapFirst(t *testing.T) {
	const rows = 1000 // 8000 bytes of values
	s, clock := newTestTiers(t, 3*8000+4000, 0)
	hot, err := holdTest(t, s, clock, "hot", rows, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	cold, _ := holdTest(t, s, clock, "cold", rows, 1, false)
	costly, _ := holdTest(t, s, clock, "costly", rows, 1000, false)
	if got := tiersOf(hot, cold, costly); got != "hot:memory cold:memory costly:memory " {
		t.Fatalf("before memory is short: %s", got)
	}
	clock.advance(30 * time.Minute)
	readTest(t, hot, 5)
	clock.advance(time.Minute)

	next, err := holdTest(t, s, clock, "next", rows, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := tiersOf(hot, cold, costly, next); got != "hot:memory cold:disk costly:memory next:memory " {
		t.Fatalf("after one more partition: %s", got)
	}
	if _, err := holdTest(t, s, clock, "last", rows, 1, false); err != nil {
		t.Fatal(err)
	}
	// "next" was just made (warm, cheap); "hot" was read 5 times a minute ago (hotter); "costly"
	// is cold but costs 1000 requests to make again.
	if got := tiersOf(hot, cold, costly, next); got != "hot:memory cold:disk costly:memory next:disk " {
		t.Fatalf("after two more partitions: %s", got)
	}
	st := s.pool.Stats()
	if st.Reserved != 3*int64(hot.data.Bytes()) || len(st.Consumers) != 1 || st.Consumers[0].Name != "dataset partitions" {
		t.Fatalf("pool after the moves: %+v", st)
	}
	if used, _ := s.diskFacts(); used <= 2*8000 {
		t.Fatalf("disk tier counts %d bytes for two partitions", used)
	}
	// Releasing a partition on disk gives its disk back; one in memory its reservation.
	s.release(cold.data)
	s.release(hot.data)
	if st := s.pool.Stats(); st.Reserved != 2*hot.data.Bytes() {
		t.Fatalf("pool after releases: %+v", st)
	}
	if facts := s.facts(nil); len(facts) != 3 {
		t.Fatalf("facts after releases: %+v", facts)
	}
}

// A partition pinned to memory never moves to disk: others move for new partitions, and a
// pinned partition that does not fit is refused with ResourceExhausted.
func TestPinnedPartitionsStayInMemory(t *testing.T) {
	const rows = 1000
	s, clock := newTestTiers(t, 2*8000+4000, 0)
	pinned, err := holdTest(t, s, clock, "pinned", rows, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Hour) // the pinned one is the coldest
	loose, _ := holdTest(t, s, clock, "loose", rows, 1, false)
	other, err := holdTest(t, s, clock, "other", rows, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := tiersOf(pinned, loose, other); got != "pinned:memory loose:disk other:memory " {
		t.Fatalf("tiers: %s", got)
	}
	if _, err := holdTest(t, s, clock, "pinned2", 2*rows, 1, true); errs.CategoryOf(err) != errs.ResourceExhausted {
		t.Fatalf("a pinned partition larger than memory: %v", err)
	}
	// What could move would not have made room: nothing moved for the refused partition.
	if got := tiersOf(pinned, loose, other); got != "pinned:memory loose:disk other:memory " {
		t.Fatalf("tiers after a refusal: %s", got)
	}
}

// When the disk tier is full too, the coldest partition on disk is evicted; reading it makes it
// again (here by a reload that makes the same rows) and holds it in a tier again. A partition
// that fits neither tier is refused.
func TestDiskFullEvictsAndARereadMakesThePartitionAgain(t *testing.T) {
	const rows = 1000
	s, clock := newTestTiers(t, 8000+4000, 16000)
	first, _ := holdTest(t, s, clock, "first", rows, 1, false)
	want := partRows(t, first.data)
	clock.advance(time.Minute)
	second, _ := holdTest(t, s, clock, "second", rows, 1, false) // first → disk
	clock.advance(time.Minute)
	third, err := holdTest(t, s, clock, "third", rows, 1, false) // second → disk, evicting first
	if err != nil {
		t.Fatal(err)
	}
	if got := tiersOf(first, second, third); got != "first:evicted second:disk third:memory " {
		t.Fatalf("tiers: %s", got)
	}
	remade := 0
	first.data.SetReload(func(context.Context) error {
		remade++
		return s.restore(first.data, tierTestBatches(0, rows))
	})
	if got := partRows(t, first.data); !slices.Equal(got, want) || remade != 1 {
		t.Fatalf("an evicted partition read again: %d rows (%d remade)", len(got), remade)
	}
	if got := tiersOf(first); got == "first:evicted " {
		t.Fatalf("tiers after the reread: %s", got)
	}
	before := tiersOf(first, second, third)
	if _, err := holdTest(t, s, clock, "huge", 10*rows, 1, false); errs.CategoryOf(err) != errs.ResourceExhausted {
		t.Fatalf("a partition larger than memory and disk: %v", err)
	}
	if got := tiersOf(first, second, third); got != before {
		t.Fatalf("a refused partition moved others: %s, was %s", got, before)
	}
}

func partRows(t *testing.T, d *memcat.PartData) []string {
	t.Helper()
	batches, release, err := d.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	var out []string
	for _, b := range batches {
		for i := range int(b.NumRows()) {
			out = append(out, b.Column(0).ValueStr(i))
		}
	}
	return out
}

// A runtime whose pool holds a fraction of a dataset keeps the rest on disk, and every
// partition reads the rows the query returns; with the disk full too, partitions are evicted and
// made again from the pinned source when read, with the same rows in the same order.
func TestRuntimeHoldsADatasetLargerThanItsMemory(t *testing.T) {
	ctx := context.Background()
	eng := newLakeEngineWith(t, engine.Config{Pool: mempool.New(64 << 10)})
	tiers, err := NewTiers(TiersConfig{Pool: eng.Pool(), DiskDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer tiers.Close()
	rt, err := New(Config{Engine: eng, Tiers: tiers})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	const query = "SELECT ride_id, city, fare FROM demo.rides"
	plan, err := rt.eng.Distribute(ctx, query, 1)
	if err != nil || plan == nil || len(plan.Scans) != 1 {
		t.Fatalf("Distribute = %+v, %v", plan, err)
	}
	groups := exec.AssignShares(plan.Scans[0].Bytes, 4)
	first := make([][]string, len(groups))
	for p, tasks := range groups {
		req := cluster.MaterializeRequest{Dataset: "rides", Generation: 1, Partitions: len(groups), Partition: p, SQL: query, Tasks: tasks}
		if _, err := rt.Materialize(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	onDisk := 0
	for _, f := range tiers.facts(nil) {
		if f.Tier == string(memcat.TierDisk) {
			onDisk++
		}
	}
	if onDisk == 0 {
		t.Fatalf("no partition went to disk: %+v (pool %+v)", tiers.facts(nil), eng.Pool().Stats())
	}
	var got []string
	for p := range groups {
		first[p] = partitionRows(t, rt, "rides", 1, p)
		got = append(got, first[p]...)
	}
	want := queryRows(t, rt.eng, query)
	slices.Sort(got)
	slices.Sort(want)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("the partitions hold %d rows, the query returns %d; or other rows", len(got), len(want))
	}
	// Evict every partition on disk; reading them makes them again, rows in the same order.
	for data, h := range tiers.parts {
		if data.Tier() == memcat.TierDisk {
			tiers.diskUsed -= data.Evict()
			h.diskBytes = 0
		}
	}
	for p := range groups {
		if again := partitionRows(t, rt, "rides", 1, p); !slices.Equal(again, first[p]) {
			t.Fatalf("partition %d made again after its eviction holds other rows or another order", p)
		}
	}
	// Dropping the dataset gives everything back.
	rt.DropDataset("rides", 1)
	if st := eng.Pool().Stats(); st.Reserved != 0 || len(tiers.facts(nil)) != 0 {
		t.Fatalf("after the drop: pool %+v, %d partitions", st, len(tiers.facts(nil)))
	}
	if used, _ := tiers.diskFacts(); used != 0 {
		t.Fatalf("after the drop the disk tier counts %d bytes", used)
	}
}

// A dataset made with Pin: memory stays in memory even where every other partition goes to disk
// (the all-on-disk mode); the system facts say which is pinned.
func TestMaterializeHonorsThePin(t *testing.T) {
	ctx := context.Background()
	eng := newLakeEngine(t)
	tiers, err := NewTiers(TiersConfig{Pool: eng.Pool(), DiskDir: t.TempDir(), ForceDisk: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tiers.Close()
	rt, err := New(Config{Engine: eng, Tiers: tiers})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, pin := range []string{"", cluster.PinMemory} {
		req := cluster.MaterializeRequest{Dataset: "d" + pin, Generation: 1, Partitions: 1, Whole: true, Pin: pin, SQL: "SELECT ride_id FROM demo.rides WHERE city = 'Lisbon'"}
		if _, err := rt.Materialize(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	got := ""
	for _, f := range rt.Memory().Partitions {
		got += fmt.Sprintf("%s:%s:%v ", f.Dataset, f.Tier, f.Pinned)
	}
	if got != "d:disk:false dmemory:memory:true " {
		t.Fatalf("partitions: %s", got)
	}
}

// Readers that open partitions while others move them to disk, evict them (a reread makes them
// again) and drop them always read whole, correct partitions or a clean error, never memory of a
// file already unmapped.
func TestReadersRaceMovesEvictionsAndDrops(t *testing.T) {
	const rows, parts = 500, 6
	s, clock := newTestTiers(t, 2*4000+1000, 3*(4000+4096))
	var held []*heldPart
	for i := range parts {
		h, err := holdTest(t, s, clock, fmt.Sprintf("p%d", i), rows, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		h.data.SetReload(func(context.Context) error { return s.restore(h.data, tierTestBatches(0, rows)) })
		held = append(held, h)
	}
	want := int64(rows * (rows - 1) / 2)
	done := make(chan error, 4)
	for r := range 4 {
		go func() {
			for i := range 200 {
				h := held[(r+i)%parts]
				batches, release, err := h.data.Open(context.Background())
				if err != nil {
					// Dropped, or made again while every tier was full of partitions on the move.
					if c := errs.CategoryOf(err); c == errs.Unavailable || c == errs.ResourceExhausted {
						continue
					}
					done <- err
					return
				}
				var sum int64
				for _, b := range batches {
					for _, v := range b.Column(0).(*array.Int64).Int64Values() {
						sum += v
					}
				}
				release()
				if sum != want {
					done <- fmt.Errorf("partition %s read sum %d, want %d", h.dataset, sum, want)
					return
				}
			}
			done <- nil
		}()
	}
	// Meanwhile: more partitions push the held ones to disk and off it, then half are dropped.
	// A hold is refused while every tier is full of partitions the readers hold open or that
	// are on the move; it is tried again until they let go.
	for i := range 6 {
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := holdTest(t, s, clock, fmt.Sprintf("q%d", i), rows, 1, false)
			if err == nil {
				break
			}
			if errs.CategoryOf(err) != errs.ResourceExhausted || time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for _, h := range held[:parts/2] {
		s.release(h.data)
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range held[:parts/2] {
		if h.data.Mappings() != 0 {
			t.Errorf("dropped partition %s still mapped after every reader finished", h.dataset)
		}
	}
}

// A partition nothing can make again (an ingested dataset's) moves to disk like any other when
// memory is short, but is never evicted from it: with the disk full of such partitions, a new
// partition that would need the room is refused instead, and they all still read.
func TestPartitionsWithoutSourceAreNeverEvicted(t *testing.T) {
	const rows = 1000
	// Memory for one partition, disk for two (each counts its size and 4 KiB while written).
	s, clock := newTestTiers(t, 8000+4000, 22000)
	hold := func(name string, noSource bool) (*heldPart, error) {
		data := memcat.NewPartData(tierTestSchema, tierTestBatches(0, rows))
		data.SetClock(clock.now)
		h := &heldPart{dataset: name, data: data, requests: 1, noSource: noSource}
		clock.advance(time.Minute)
		return h, s.hold(h)
	}
	first, _ := hold("first", true)
	second, _ := hold("second", true) // first → disk
	third, err := hold("third", true) // second → disk: the disk is full
	if err != nil {
		t.Fatal(err)
	}
	if got := tiersOf(first, second, third); got != "first:disk second:disk third:memory " {
		t.Fatalf("tiers: %s", got)
	}
	// third would have to move to a full disk of what cannot be evicted: refused.
	if _, err := hold("fourth", false); errs.CategoryOf(err) != errs.ResourceExhausted {
		t.Fatalf("a partition that needs the room of unevictable ones: %v", err)
	}
	if got := tiersOf(first, second, third); got != "first:disk second:disk third:memory " {
		t.Fatalf("tiers after the refusal: %s", got)
	}
	for _, h := range []*heldPart{first, second, third} {
		if got := partRows(t, h.data); len(got) != rows {
			t.Errorf("%s reads %d rows", h.dataset, len(got))
		}
	}
}
