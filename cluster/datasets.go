package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/cenkalti/backoff/v5"
	"golang.org/x/sync/errgroup"

	memcat "github.com/cachedb/cachedb/catalog/memory"

	"github.com/cachedb/cachedb/cluster/schedule"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/metrics"
	"github.com/cachedb/cachedb/internal/rpcerr"
	"github.com/cachedb/cachedb/internal/safe"
)

// Defaults of DatasetsConfig.
const (
	// DefaultPartitionTicketTTL is how long a partition ticket the head signs for itself lives.
	DefaultPartitionTicketTTL = 10 * time.Minute
	// firstRebuildWait and maxRebuildWait bound the (exponential, jittered) wait between
	// attempts to make a lost node's partitions again.
	firstRebuildWait = time.Second
	maxRebuildWait   = 30 * time.Second
)

// Dataset states shown in system.datasets.
const (
	DatasetReady      = "ready"
	DatasetRebuilding = "rebuilding"
	DatasetDegraded   = "degraded"
	// DatasetLost: an ingested dataset a partition of which was held only by a lost data node
	// (see Datasets.Ingest): it cannot be read again.
	DatasetLost = "lost"
)

// DatasetsConfig configures the head's dataset registry.
type DatasetsConfig struct {
	// Membership says which data nodes are alive.
	Membership *Membership
	// Catalog is the head engine's own catalog: datasets are attached there, so queries name
	// them like tables.
	Catalog *memcat.Catalog
	// Key is the cluster secret the head signs partition tickets and node actions with.
	Key *ticket.Keyring
	// Transport reaches the data nodes (zero: plaintext).
	Transport Transport
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// DatasetJob describes a dataset to materialize: the query and how its rows split into
// partitions. The engine plans it (engine.Engine builds jobs); the registry places and makes it.
type DatasetJob struct {
	Name string
	// Replace drops a dataset of the same name once the new one is complete.
	Replace bool
	// SQL runs in the session Catalog/Schema with Pins fixing every table version it reads.
	SQL             string
	Catalog, Schema string
	Pins            map[string]string
	// Fingerprint identifies the plan over its pinned versions: a job with the same name and
	// fingerprint as a held dataset reuses it.
	Fingerprint string
	// ResultSchema is the schema the dataset holds: the query's, with Stored applied.
	ResultSchema *arrow.Schema
	// Stored names, per result column, the type the data nodes cast the query's column to
	// before holding it ("" keeps the query's type): a table column the scan widened (float32
	// to float64, say) is held as the table stores it.
	Stored []string
	// Parts is the partitions: the scan tasks each one holds (nil Tasks: the whole query).
	Parts []PartSpec
	// Source describes what the dataset was made from, for system.datasets.
	Source string
	// Pin is PinMemory to keep the partitions in memory, "" to let nodes move them to disk.
	Pin string
}

// PartSpec is one partition of a job.
type PartSpec struct {
	Tasks []int
	Whole bool
	// Bytes estimates what the partition reads, for placing it.
	Bytes int64
}

// Progress reports a materialization as it goes.
type Progress struct {
	Partitions, Done int
	Rows, Bytes      int64
}

// DatasetInfo is a dataset as system.datasets shows it.
type DatasetInfo struct {
	Name        string
	Generation  uint64
	Fingerprint string
	Source      string
	SQL         string
	Pins        map[string]string
	Partitions  int
	Rows, Bytes int64
	// Nodes are the IDs of the nodes holding partitions, sorted.
	Nodes   []string
	State   string
	Created time.Time
	// Hits counts reads of the dataset and jobs it answered without materializing again.
	Hits int64
	// Reused is set on the result of a Create that found the dataset already held.
	Reused bool
}

// Datasets is the head's registry of materialized datasets: the network side of
// schedule.Scheduler, which holds the registry's state and makes every placement decision.
// Datasets asks it, has the partitions made on the data nodes it names, reports the outcomes,
// attaches each dataset to the head's catalog, reads partitions for the head's own queries,
// drops datasets, and rebuilds in the background what a lost node held, until Close. It is
// safe for concurrent use.
type Datasets struct {
	cfg     DatasetsConfig
	clients *nodeClients

	// ctx ends with Close; background rebuilds run under it and are counted in rebuilds.
	ctx      context.Context
	stop     context.CancelFunc
	rebuilds sync.WaitGroup

	mu     sync.Mutex
	closed bool
	sched  *schedule.Scheduler
	// entries holds every generation the scheduler holds: being made, or attached.
	entries map[schedule.Key]*datasetEntry
}

// datasetEntry is what the registry keeps of one dataset generation beside the scheduler.
type datasetEntry struct {
	key     schedule.Key
	job     DatasetJob
	ds      *memcat.Dataset
	created time.Time
	reuses  int64
	// rows holds, while an ingested dataset is made (Ingest), the rows of each partition: what
	// its makes send. It is nil for a dataset made by a query, and once an ingest ended.
	rows [][]arrow.RecordBatch
	// ingested marks a dataset made from rows a client sent: nothing can make it again.
	ingested bool
}

// NewDatasets returns an empty registry, subscribed to the events of cfg.Membership: a lost
// node's partitions are made again on the others.
func NewDatasets(cfg DatasetsConfig) *Datasets {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, stop := context.WithCancel(context.Background())
	d := &Datasets{cfg: cfg, clients: newNodeClients(cfg.Key, cfg.Transport), ctx: ctx, stop: stop, sched: schedule.New(), entries: map[schedule.Key]*datasetEntry{}}
	cfg.Membership.subscribe(d.nodeChanged)
	return d
}

// PartSpecs groups a query's scan tasks (their estimated bytes) into the partitions of a
// dataset (schedule.GroupTasks): partitions of them, or, when partitions is 0 or less,
// schedule.DefaultPartitionsPerNode per alive data node.
func (d *Datasets) PartSpecs(taskBytes []int64, partitions int) []PartSpec {
	groups := schedule.GroupTasks(taskBytes, partitions, len(PlacementNodes(d.cfg.Membership.Nodes())))
	out := make([]PartSpec, len(groups))
	for i, g := range groups {
		out[i] = PartSpec{Tasks: g.Tasks, Bytes: g.Bytes}
	}
	return out
}

// CanPlace reports whether any data node may be given a new dataset's partitions.
func (d *Datasets) CanPlace() bool {
	return len(PlacementNodes(d.cfg.Membership.Nodes())) > 0
}

// Close stops the background rebuilds, waits for them to end, and closes the registry's
// connections to data nodes. No goroutine of the registry outlives it.
func (d *Datasets) Close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.stop()
	d.rebuilds.Wait()
	d.clients.closeAll()
}

// Lookup returns the dataset held under name.
func (d *Datasets) Lookup(name string) (DatasetInfo, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.entryLocked(name)
	if e == nil {
		return DatasetInfo{}, false
	}
	return d.infoLocked(e), true
}

// ByFingerprint returns a ready dataset whose plan has the given fingerprint.
func (d *Datasets) ByFingerprint(fingerprint string) (DatasetInfo, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.entries {
		if e.job.Fingerprint == fingerprint && d.currentLocked(e) {
			if info := d.infoLocked(e); info.State == DatasetReady {
				return info, true
			}
		}
	}
	return DatasetInfo{}, false
}

// Reuse returns the ready dataset named name when it holds the plan with that fingerprint,
// counting the reuse and reporting it to progress as complete. It lets a caller skip planning
// (and the metadata reads it costs) when the job would be reused anyway.
func (d *Datasets) Reuse(name, fingerprint string, progress func(Progress)) (DatasetInfo, bool) {
	d.mu.Lock()
	e := d.entryLocked(name)
	if e == nil || e.job.Fingerprint != fingerprint || d.infoLocked(e).State != DatasetReady {
		d.mu.Unlock()
		return DatasetInfo{}, false
	}
	e.reuses++
	metrics.DatasetLoad("reused")
	info := d.infoLocked(e)
	d.mu.Unlock()
	info.Reused = true
	if progress != nil {
		progress(Progress{Partitions: info.Partitions, Done: info.Partitions, Rows: info.Rows, Bytes: info.Bytes})
	}
	return info, true
}

// Hit counts a use of the named dataset that read nothing from storage (a reused job or a query
// answered from it).
func (d *Datasets) Hit(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.entryLocked(name); e != nil {
		e.reuses++
	}
}

// List returns every dataset, by name.
func (d *Datasets) List() []DatasetInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []DatasetInfo
	for _, e := range d.entries {
		if d.currentLocked(e) {
			out = append(out, d.infoLocked(e))
		}
	}
	slices.SortFunc(out, func(a, b DatasetInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// progressOf returns the callback counting a dataset's made partitions (safe for concurrent
// use) and reporting each count to progress (may be nil).
func progressOf(partitions int, progress func(Progress)) func(PartitionStats) {
	var mu sync.Mutex
	prog := Progress{Partitions: partitions}
	return func(st PartitionStats) {
		mu.Lock()
		defer mu.Unlock()
		prog.Done++
		prog.Rows += st.Rows
		prog.Bytes += st.Bytes
		if progress != nil {
			progress(prog)
		}
	}
}

// attachLocked attaches e's dataset to the catalog, replacing one of its name when replace, and
// forgets the entry of the dataset it replaced, which it returns for its partitions to be dropped
// on the nodes once d.mu is released. d.mu must be held.
func (d *Datasets) attachLocked(e *datasetEntry, replace bool) (replaced *datasetEntry, err error) {
	old, err := d.cfg.Catalog.AttachDataset(e.ds, replace)
	if err == nil && old != nil {
		if replaced = d.entries[keyOf(old)]; replaced != nil {
			d.forgetLocked(replaced)
		}
	}
	return replaced, err
}

// nameFree checks that a new dataset may take name: one held by a dataset only when replace
// (exists is the error otherwise), one held by a table that is not a dataset never.
func (d *Datasets) nameFree(ctx context.Context, name string, replace bool, exists error) error {
	d.mu.Lock()
	taken := d.entryLocked(name) != nil
	d.mu.Unlock()
	if taken && !replace {
		return exists
	}
	if _, err := d.cfg.Catalog.Table(ctx, name); err == nil {
		if _, isDataset := d.cfg.Catalog.Dataset(name); !isDataset {
			return errs.AlreadyExistsf("table %q already exists (a memory table, not a dataset)", name)
		}
	}
	return nil
}

// Create materializes job on the alive data nodes and attaches the dataset to the catalog. When
// a complete dataset of that name already has the job's fingerprint, it is reused: nothing is
// read and the result has Reused set. A name held by a different dataset is an
// errs.AlreadyExists error unless job.Replace; a table or view of that name always is. progress
// (may be nil) is called after each partition is made.
func (d *Datasets) Create(ctx context.Context, job DatasetJob, progress func(Progress)) (_ DatasetInfo, err error) {
	if len(job.Parts) == 0 {
		return DatasetInfo{}, errs.Internalf("dataset %q has no partitions", job.Name)
	}
	if info, ok := d.Reuse(job.Name, job.Fingerprint, progress); ok {
		return info, nil
	}
	defer func() { metrics.DatasetLoad(metrics.Outcome(err)) }()
	exists := errs.AlreadyExistsf("dataset %q already exists with a different definition or snapshot; drop it or replace it", job.Name)
	if err := d.nameFree(ctx, job.Name, job.Replace, exists); err != nil {
		return DatasetInfo{}, err
	}

	if err := d.admit(ctx, job); err != nil {
		return DatasetInfo{}, err
	}
	bytes := make([]int64, len(job.Parts))
	for i, p := range job.Parts {
		bytes[i] = p.Bytes
	}
	now := time.Now()
	d.mu.Lock()
	key := d.sched.Add(job.Name, now, bytes)
	e := &datasetEntry{key: key, job: job, ds: memcat.NewDataset(job.Name, key.Generation, job.ResultSchema, len(job.Parts)), created: now}
	d.entries[key] = e
	d.mu.Unlock()
	err = d.make(ctx, e, progressOf(len(job.Parts), progress))
	if err != nil {
		d.discard(e)
		return DatasetInfo{}, fmt.Errorf("materializing dataset %q: %w", job.Name, err)
	}
	d.mu.Lock()
	replaced, err := d.attachLocked(e, job.Replace)
	info := d.infoLocked(e)
	d.mu.Unlock()
	if err != nil {
		d.discard(e)
		return DatasetInfo{}, err
	}
	if replaced != nil {
		d.dropOnNodes(replaced)
	}
	// Partitions of a node lost while the dataset was made wait again: they are made in the
	// background, like a later loss's.
	d.release(e)
	d.cfg.Logger.Info("dataset materialized", "dataset", job.Name, "generation", key.Generation, "partitions", info.Partitions, "rows", info.Rows, "bytes", info.Bytes, "nodes", info.Nodes)
	return info, nil
}

// Drop detaches the named dataset and frees its partitions on the nodes. It reports false when
// no dataset has that name (a table may).
func (d *Datasets) Drop(name string) bool {
	d.mu.Lock()
	e := d.entryLocked(name)
	if e != nil {
		d.forgetLocked(e)
		d.cfg.Catalog.DetachDataset(name, e.key.Generation)
	}
	d.mu.Unlock()
	if e == nil {
		return false
	}
	d.dropOnNodes(e)
	return true
}

// nodeChanged applies a membership event to the registry, which NewDatasets subscribes to
// every event of its membership. The scheduler decides what moves (schedule.Scheduler.Observe):
// only a lost or replaced process's partitions are made again, on the alive nodes, and until
// then reading them fails with a retryable Unavailable error; calls in flight to a node gone
// silent are cut off. A suspect node keeps its partitions and reads still go to it; it only
// gets no new ones. A lost process that registers again (same boot ID) holds again those of
// its partitions not made elsewhere yet. It returns at once and rebuilds in the background.
func (d *Datasets) nodeChanged(e Event) {
	if e.Kind == EventLost {
		// Calls in flight to a node gone silent are cut off, so they move to other nodes. A
		// process replaced by a restart at the same address keeps the connection: it reconnects
		// to the new process, and calls made to that are not cut off.
		if now, ok := d.cfg.Membership.Node(e.Node.ID); !ok || now.State == StateLost || now.Addr != e.Node.Addr {
			d.clients.forget(e.Node.Addr)
		}
	}
	d.mu.Lock()
	ch := d.sched.Observe(scheduleNode(e.Node))
	for _, u := range ch.Unowned {
		if en := d.entries[u.Dataset]; en != nil {
			p := en.ds.Parts()[u.Partition]
			p.Fetch = nil
			_ = en.ds.SetPart(u.Partition, p)
		}
	}
	for _, m := range ch.Reowned {
		if en := d.entries[m.Dataset]; en != nil {
			p := en.ds.Parts()[m.Partition]
			p.Location, p.Fetch, p.Gone = m.Node.Addr, d.fetcher(en, m.Partition, m.Node.Addr), nil
			_ = en.ds.SetPart(m.Partition, p)
		}
	}
	for _, l := range ch.Lost {
		if en := d.entries[l.Dataset]; en != nil {
			p := en.ds.Parts()[l.Partition]
			p.Fetch, p.Gone = nil, lostPartition(en.job.Name, l.Partition, e.Node.ID)
			_ = en.ds.SetPart(l.Partition, p)
		}
	}
	var rebuild []*datasetEntry
	for _, k := range ch.Rebuild {
		if en := d.entries[k]; en != nil {
			rebuild = append(rebuild, en)
		}
	}
	d.mu.Unlock()
	if len(ch.Reowned) > 0 {
		d.cfg.Logger.Info("a lost data node came back holding partitions not yet made again; they are read there again", "node", e.Node.ID, "partitions", len(ch.Reowned))
	}
	if len(ch.Lost) > 0 {
		d.cfg.Logger.Error("a lost data node held the only copy of partitions of ingested datasets: they are lost", "node", e.Node.ID, "partitions", len(ch.Lost))
	}
	for _, en := range rebuild {
		d.rebuild(en)
	}
}

// release ends a drive of e (Create's); partitions that wait again are made in the background.
func (d *Datasets) release(e *datasetEntry) {
	d.mu.Lock()
	again := d.sched.Release(e.key)
	d.mu.Unlock()
	if again {
		d.rebuild(e)
	}
}

// rebuild drives e in the background (the scheduler made the caller its driver): it makes the
// waiting partitions again, retrying with exponential backoff until none waits, the dataset is
// no longer held, or Close.
func (d *Datasets) rebuild(e *datasetEntry) {
	d.mu.Lock()
	if d.closed || e.ingested {
		// An ingested dataset is made only by its Ingest, which has its rows (nothing else
		// could make it again).
		d.mu.Unlock()
		return
	}
	d.rebuilds.Add(1)
	d.mu.Unlock()
	log := d.cfg.Logger.With("dataset", e.key.Name, "generation", e.key.Generation)
	safe.Spawn("rebuilding dataset partitions", func() error {
		log.Warn("making again the dataset partitions of a lost data node")
		wait := backoff.NewExponentialBackOff()
		wait.InitialInterval, wait.Multiplier, wait.MaxInterval = firstRebuildWait, 2, maxRebuildWait
		for {
			// Nothing else makes the partitions again while the nodes stay as they are: retry
			// without a limit but Close.
			_, err := backoff.Retry(d.ctx, func() (struct{}, error) { return struct{}{}, d.make(d.ctx, e, nil) },
				backoff.WithBackOff(wait), backoff.WithMaxElapsedTime(0),
				backoff.WithNotify(func(err error, next time.Duration) {
					log.Error("making dataset partitions again failed; retrying", "err", err, "retry_in", next)
				}))
			if err != nil {
				return nil // closed
			}
			d.mu.Lock()
			again := d.sched.Release(e.key)
			d.mu.Unlock()
			if !again {
				log.Info("dataset partitions made again")
				return nil
			}
		}
	}, func(err error) {
		if err != nil {
			// A panic: the next membership change that finds the partitions waiting starts
			// another rebuild.
			d.mu.Lock()
			d.sched.Abandon(e.key)
			d.mu.Unlock()
		}
		d.rebuilds.Done()
	})
}

// make drives e: it has the waiting partitions made where the scheduler places them, the nodes
// in parallel, each node's partitions one after another, round after round until none waits
// (partitions wait again when their node is lost while it makes them). It fails when a
// partition could not be made (the scheduler gave it up) or no node is alive.
func (d *Datasets) make(ctx context.Context, e *datasetEntry, done func(PartitionStats)) error {
	for {
		nodes := d.scheduleNodes()
		d.mu.Lock()
		makes, err := d.sched.Plan(e.key, nodes)
		d.mu.Unlock()
		if err != nil || len(makes) == 0 {
			return err
		}
		queues := map[string][]schedule.Make{}
		for _, m := range makes {
			queues[m.Node.ID] = append(queues[m.Node.ID], m)
		}
		g, gctx := errgroup.WithContext(ctx)
		for _, queue := range queues {
			safe.Go(g, "dataset materialization", func() error {
				// Every make is reported, even after another failed (it then fails at once
				// on the canceled context), so none is left without an outcome.
				var first error
				for _, m := range queue {
					if err := d.makePart(gctx, e, m, done); err != nil && first == nil {
						first = err
					}
				}
				return first
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
	}
}

// makePart carries out m and reports the outcome to the scheduler; when the node failed (not
// the query), it carries out the scheduler's next Make for the partition, on another node.
func (d *Datasets) makePart(ctx context.Context, e *datasetEntry, m schedule.Make, done func(PartitionStats)) error {
	call, err := d.partMaker(e, m.Partition)
	if err != nil {
		return err
	}
	for {
		var stats PartitionStats
		err := ctx.Err()
		if err == nil {
			stats, err = call(ctx, m.Node.Addr)
		}
		if err == nil {
			d.mu.Lock()
			counted := d.sched.Done(m)
			if counted {
				_ = e.ds.SetPart(m.Partition, memcat.Part{Rows: stats.Rows, Bytes: stats.Bytes, Location: m.Node.Addr, Fetch: d.fetcher(e, m.Partition, m.Node.Addr)})
			}
			d.mu.Unlock()
			if counted && done != nil {
				done(stats)
			}
			// Not counted: the node was lost while it made the partition (the next round
			// places it again), or the dataset is gone.
			return nil
		}
		nodeFault := rpcerr.Retryable(ctx, err)
		nodes := d.scheduleNodes()
		d.mu.Lock()
		next, verdict := d.sched.Failed(m, nodeFault, nodes)
		d.mu.Unlock()
		switch verdict {
		case schedule.Stale:
			return nil
		case schedule.GiveUp:
			if !nodeFault {
				return fmt.Errorf("partition %d on data node %s: %w", m.Partition, m.Node.ID, err)
			}
			// The nodes failed, not the query: retrying later may succeed.
			return errs.Unavailablef("partition %d on data node %s: %v", m.Partition, m.Node.ID, err)
		}
		d.cfg.Logger.Warn("data node failed to make a partition; trying another", "dataset", e.job.Name, "partition", m.Partition, "node", m.Node.ID, "next", next.Node.ID, "err", err)
		m = next
	}
}

// partMaker returns what makes partition p of e on the node at an address: a materialize action
// (the node runs the partition's part of the query), or, for an ingested dataset, a store call
// that hands the node the partition's rows.
func (d *Datasets) partMaker(e *datasetEntry, p int) (func(ctx context.Context, addr string) (PartitionStats, error), error) {
	if e.ingested {
		if e.rows == nil {
			return nil, errs.Internalf("partition %d of ingested dataset %q has no rows to send: it is made only while it is ingested", p, e.job.Name)
		}
		req := StoreRequest{Dataset: e.job.Name, Generation: e.key.Generation, Partitions: len(e.job.Parts), Partition: p, Pin: e.job.Pin}
		return func(ctx context.Context, addr string) (PartitionStats, error) {
			return d.clients.store(ctx, addr, req, e.job.ResultSchema, e.rows[p])
		}, nil
	}
	spec := e.job.Parts[p]
	req := MaterializeRequest{
		Dataset: e.job.Name, Generation: e.key.Generation, Partitions: len(e.job.Parts), Partition: p,
		SQL: e.job.SQL, Catalog: e.job.Catalog, Schema: e.job.Schema, Pins: e.job.Pins,
		Tasks: spec.Tasks, Whole: spec.Whole, Stored: e.job.Stored, Pin: e.job.Pin,
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, errs.Internalf("materialize request: %v", err)
	}
	return func(ctx context.Context, addr string) (PartitionStats, error) {
		var stats PartitionStats
		err := d.clients.action(ctx, addr, ActionMaterialize, body, &stats)
		return stats, err
	}, nil
}

// fetcher reads partition p of e from the node at addr, for queries the head runs itself.
func (d *Datasets) fetcher(e *datasetEntry, p int, addr string) func(context.Context, []int) (array.RecordReader, error) {
	return func(ctx context.Context, columns []int) (array.RecordReader, error) {
		raw, err := EncodePartitionTicket(d.cfg.Key, PartitionTicket{
			Dataset: e.job.Name, Generation: e.key.Generation, Partition: p, Columns: columns,
			Expires: time.Now().Add(DefaultPartitionTicketTTL),
		})
		if err != nil {
			return nil, err
		}
		rdr, err := d.clients.doGet(ctx, addr, raw)
		if err != nil && rpcerr.Retryable(ctx, err) {
			return nil, errs.Unavailablef("reading partition %d of dataset %q from data node %s: %v; a lost node's partitions are rebuilt on the others, retry shortly", p, e.job.Name, addr, err)
		}
		return rdr, err
	}
}

// discard forgets e, which failed to be made, and frees what the nodes made of it.
func (d *Datasets) discard(e *datasetEntry) {
	d.mu.Lock()
	d.forgetLocked(e)
	d.mu.Unlock()
	d.dropOnNodes(e)
}

// forgetLocked removes e from the registry and the scheduler: its outcomes become stale and
// its rebuild, if any, ends.
func (d *Datasets) forgetLocked(e *datasetEntry) {
	delete(d.entries, e.key)
	d.sched.Remove(e.key)
}

// dropOnNodes frees e on every node that may hold it: alive and suspect ones.
func (d *Datasets) dropOnNodes(e *datasetEntry) {
	body, _ := json.Marshal(DropRequest{Dataset: e.job.Name, Generation: e.key.Generation})
	seen := map[string]bool{}
	for _, n := range d.cfg.Membership.Nodes() {
		if n.State == StateLost {
			continue
		}
		if seen[n.Addr] {
			continue
		}
		seen[n.Addr] = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := d.clients.action(ctx, n.Addr, ActionDropPartitions, body, nil); err != nil {
			d.cfg.Logger.Warn("data node did not drop dataset partitions", "dataset", e.job.Name, "node", n.ID, "err", err)
		}
		cancel()
	}
}

// scheduleNodes is the membership now, as the scheduler takes it. It must be called without
// mu: reading the membership may deliver events, which take mu.
func (d *Datasets) scheduleNodes() []schedule.Node {
	nodes := d.cfg.Membership.Nodes()
	out := make([]schedule.Node, len(nodes))
	for i, n := range nodes {
		out[i] = scheduleNode(n)
	}
	return out
}

func scheduleNode(n Node) schedule.Node {
	return schedule.Node{ID: n.ID, Addr: n.Addr, BootID: n.BootID, State: schedule.State(n.State)}
}

// entryLocked returns the entry of the dataset attached under name.
func (d *Datasets) entryLocked(name string) *datasetEntry {
	ds, ok := d.cfg.Catalog.Dataset(name)
	if !ok {
		return nil
	}
	return d.entries[keyOf(ds)]
}

// currentLocked reports whether e is the generation attached under its name.
func (d *Datasets) currentLocked(e *datasetEntry) bool {
	ds, ok := d.cfg.Catalog.Dataset(e.job.Name)
	return ok && ds == e.ds
}

func keyOf(ds *memcat.Dataset) schedule.Key {
	return schedule.Key{Name: ds.Name(), Generation: ds.Generation()}
}

// infoLocked is e as system.datasets shows it: rebuilding while a partition has no holder.
func (d *Datasets) infoLocked(e *datasetEntry) DatasetInfo {
	rows, bytes := e.ds.Totals()
	info := DatasetInfo{
		Name: e.job.Name, Generation: e.key.Generation, Fingerprint: e.job.Fingerprint, Source: e.job.Source,
		SQL: e.job.SQL, Pins: e.job.Pins, Partitions: len(e.job.Parts), Rows: rows, Bytes: bytes,
		State: DatasetReady, Created: e.created, Hits: e.reuses,
	}
	nodes := map[string]bool{}
	missing := 0
	for _, o := range d.sched.Owners(e.key) {
		if o.ID == "" {
			missing++
			continue
		}
		nodes[o.ID] = true
	}
	info.Nodes = slices.Sorted(maps.Keys(nodes))
	switch {
	case len(d.sched.Lost(e.key)) > 0:
		info.State = DatasetLost
	case missing > 0:
		info.State = DatasetRebuilding
	}
	return info
}

// nodeClients keeps one Flight client per data node address, each reached over transport. Its
// actions are signed with key, the cluster secret.
type nodeClients struct {
	key       *ticket.Keyring
	transport Transport
	mu        sync.Mutex
	clients   map[string]flight.Client
}

func newNodeClients(key *ticket.Keyring, t Transport) *nodeClients {
	return &nodeClients{key: key, transport: t, clients: map[string]flight.Client{}}
}

// client returns the client for addr, dialing it on first use.
func (c *nodeClients) client(addr string) (flight.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[addr]; ok {
		return cl, nil
	}
	cl, err := dialNode(addr, c.transport)
	if err != nil {
		return nil, err
	}
	c.clients[addr] = cl
	return cl, nil
}

// forget closes the client of a node that is gone.
func (c *nodeClients) forget(addr string) {
	c.mu.Lock()
	cl, ok := c.clients[addr]
	delete(c.clients, addr)
	c.mu.Unlock()
	if ok {
		_ = cl.Close()
	}
}

func (c *nodeClients) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for addr, cl := range c.clients {
		_ = cl.Close()
		delete(c.clients, addr)
	}
}

// action runs one DoAction on the node at addr and decodes its single JSON result into out
// (nil: ignore it).
func (c *nodeClients) action(ctx context.Context, addr, typ string, body []byte, out any) error {
	cl, err := c.client(addr)
	if err != nil {
		return err
	}
	action := &flight.Action{Type: typ, Body: body}
	stream, err := cl.DoAction(signAction(ctx, c.key, action), action)
	if err != nil {
		return rpcerr.FromStatus(err)
	}
	var last []byte
	for {
		res, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rpcerr.FromStatus(err)
		}
		last = res.GetBody()
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(last, out); err != nil {
		return errs.Internalf("%s result from %s: %v", typ, addr, err)
	}
	return nil
}

// doGet redeems a ticket at the node at addr and returns the stream's reader.
func (c *nodeClients) doGet(ctx context.Context, addr string, ticket []byte) (array.RecordReader, error) {
	cl, err := c.client(addr)
	if err != nil {
		return nil, err
	}
	stream, err := cl.DoGet(ctx, &flight.Ticket{Ticket: ticket})
	if err != nil {
		return nil, rpcerr.FromStatus(err)
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		return nil, rpcerr.FromStatus(err)
	}
	return remoteReader{rdr}, nil
}
