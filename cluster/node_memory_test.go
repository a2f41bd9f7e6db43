package cluster

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"

	"github.com/cachedb/cachedb/catalog"
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/mempool"
)

// startMemoryNodes starts data nodes that report the given NodeMemory (by node ID; what it is
// when asked) and make every partition they are asked for, registered with a fresh registry.
func startMemoryNodes(t *testing.T, reports map[string]*NodeMemory) *Datasets {
	t.Helper()
	clock := newFakeClock()
	m := NewMembership(Config{
		HeartbeatInterval: time.Second, SuspectAfter: tSuspect, LostAfter: tLost, Now: clock.Now,
		Probe: func(context.Context, string) ProbeResult { return ProbeUnknown },
	})
	d := NewDatasets(DatasetsConfig{Membership: m, Catalog: memcat.NewCatalog("mem"), Logger: quietLog})
	t.Cleanup(d.Close)
	for id, report := range reports {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		flight.RegisterFlightServiceServer(srv, NodeActions(NodeConfig{ID: id, Store: &countingStore{}, Memory: func() NodeMemory { return *report }})(&flight.BaseFlightServer{}))
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(srv.Stop)
		if _, err := m.Register(id, lis.Addr().String(), "boot-"+id); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func memoryJob(name string, bytes ...int64) DatasetJob {
	job := DatasetJob{Name: name, SQL: "SELECT 1", ResultSchema: arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)}
	for _, b := range bytes {
		job.Parts = append(job.Parts, PartSpec{Whole: true, Bytes: b})
	}
	return job
}

// A load whose estimate (its scan's bytes × ArrowExpansion) passes what the data nodes have free
// in memory and on disk is refused before any partition is made, saying what it needs and what
// is free; data nodes sharing one process count once.
func TestDatasetLoadsAreAdmittedByFreeMemoryAndDisk(t *testing.T) {
	shared := NodeMemory{Process: "p1", Memory: mempool.Stats{Limit: 1000, Reserved: 200}, DiskTier: true, DiskLimit: 500, DiskUsed: 100}
	full := NodeMemory{Process: "p2", Memory: mempool.Stats{Limit: 1000, Reserved: 1000}}
	d := startMemoryNodes(t, map[string]*NodeMemory{"a": &shared, "b": &shared, "c": &full})
	ctx := context.Background()
	// Free: 800 of memory and 400 of disk in p1 (once), nothing in p2.
	_, err := d.Create(ctx, memoryJob("big", 400, 201), nil)
	if errs.CategoryOf(err) != errs.ResourceExhausted {
		t.Fatalf("a load of 1202 bytes with 1200 free: %v", err)
	}
	for _, want := range []string{`"big"`, "1.2 KiB", "800 B of memory", "400 B of disk"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if _, ok := d.Lookup("big"); ok {
		t.Error("a refused load left a dataset")
	}
	if _, err := d.Create(ctx, memoryJob("fits", 300, 300), nil); err != nil {
		t.Fatalf("a load of 1200 bytes with 1200 free: %v", err)
	}
}

// A node with no memory limit, or one that does not report, leaves the free space unknown: the
// load is admitted.
func TestDatasetLoadsAreAdmittedWhenFreeSpaceIsUnknown(t *testing.T) {
	d := startMemoryNodes(t, map[string]*NodeMemory{"a": {Process: "p1"}})
	if _, err := d.Create(context.Background(), memoryJob("any", 1<<40), nil); err != nil {
		t.Fatalf("a node without a limit: %v", err)
	}
}

// system.memory has the head's row and one per data node; system.partitions one per partition;
// system.datasets sums the tiers of the dataset's generation.
func TestSystemMemoryPartitionsAndDatasetTiers(t *testing.T) {
	read := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	node := NodeMemory{
		Process: "p1", DiskTier: true, DiskLimit: 1 << 30, DiskUsed: 600,
		Memory: mempool.Stats{Limit: 1 << 20, Reserved: 900, Peak: 1000, Refusals: 2, Consumers: []mempool.ConsumerStats{{Name: PartitionsConsumer, Bytes: 700, Reservations: 1}, {Name: "sort", Bytes: 200, Reservations: 1}}},
	}
	d := startMemoryNodes(t, map[string]*NodeMemory{"a": &node})
	info, err := d.Create(context.Background(), memoryJob("feats", 100), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The node reports the partitions of the dataset's generation (and of an older one).
	node.Partitions = []PartitionFacts{
		{Dataset: "feats", Generation: info.Generation, Partition: 0, Tier: "memory", Rows: 10, Bytes: 700, Reads: 3, LastRead: read, RebuildRequests: 4},
		{Dataset: "feats", Generation: info.Generation, Partition: 1, Tier: "disk", Rows: 5, Bytes: 500, DiskBytes: 600, RebuildRequests: 2},
		{Dataset: "feats", Generation: info.Generation + 100, Partition: 0, Tier: "memory", Rows: 1, Bytes: 99},
	}
	sys := NewSystemCatalog(d.cfg.Membership, d)
	sys.SetLocalMemory(func() NodeMemory { return NodeMemory{Memory: mempool.Stats{Limit: 5}} })

	rows := scanSystem(t, sys, "memory")
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "head||5|") {
		t.Fatalf("system.memory = %q", rows)
	}
	if want := "|1048576|900|1000|2|700|dataset partitions=700,sort=200|600|1073741824|(null)"; !strings.HasPrefix(rows[1], "a|") || !strings.HasSuffix(rows[1], want) {
		t.Fatalf("system.memory node row = %q, want a|addr%s", rows[1], want)
	}
	parts := scanSystem(t, sys, "partitions")
	if len(parts) != 3 || !strings.HasPrefix(parts[0], "feats|") || !strings.Contains(parts[0], "|0|a|memory|10|700|0|3|2026-05-01T12:00:00|4|false") ||
		!strings.Contains(parts[1], "|1|a|disk|5|500|600|0|(null)|2|false") {
		t.Fatalf("system.partitions = %q", parts)
	}
	tbl, err := sys.Table(context.Background(), "datasets")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := tbl.Scan(context.Background(), catalog.ScanRequest{Columns: []int{0, firstTierColumn, firstTierColumn + 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := readTask(t, plan.Tasks[0]); len(got) != 1 || got[0] != "feats|700|600" {
		t.Fatalf("system.datasets tiers = %q", got)
	}
}

// scanSystem reads every column of a system table as "v|v|..." rows.
func scanSystem(t *testing.T, c *SystemCatalog, name string) []string {
	t.Helper()
	tbl, err := c.Table(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := tbl.Scan(context.Background(), catalog.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return readTask(t, plan.Tasks[0])
}

func readTask(t *testing.T, task catalog.ScanTask) []string {
	t.Helper()
	rdr, err := task.Open(context.Background(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var out []string
	for rdr.Next() {
		b := rdr.RecordBatch()
		for i := range int(b.NumRows()) {
			vals := make([]string, b.NumCols())
			for c := range vals {
				vals[c] = b.Column(c).ValueStr(i)
			}
			out = append(out, strings.Join(vals, "|"))
		}
	}
	return out
}
