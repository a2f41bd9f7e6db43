package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/status"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/safe"
)

// Defaults of DatasetsConfig.
const (
	// DefaultPartitionTicketTTL is how long a partition ticket the head signs for itself lives.
	DefaultPartitionTicketTTL = 10 * time.Minute
	// maxMaterializeAttempts bounds the nodes one partition is tried on before the dataset
	// fails.
	maxMaterializeAttempts = 3
	// maxRebuildWait bounds the wait between attempts to make a lost node's partitions again.
	maxRebuildWait = 30 * time.Second
)

// Dataset states shown in system.datasets.
const (
	DatasetReady      = "ready"
	DatasetRebuilding = "rebuilding"
	DatasetDegraded   = "degraded"
)

// DatasetsConfig configures the head's dataset registry.
type DatasetsConfig struct {
	// Membership says which data nodes are alive.
	Membership *Membership
	// Catalog is the head engine's own catalog: datasets are attached there, so queries name
	// them like tables.
	Catalog *memcat.Catalog
	// Key is the cluster secret the head signs partition tickets with.
	Key []byte
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

// Datasets is the head's registry of materialized datasets: it places partitions on data nodes,
// has them made there, attaches each dataset to the head's catalog, reads partitions for the
// head's own queries, drops datasets, and rebuilds the partitions of a lost node on the
// survivors. It is safe for concurrent use.
type Datasets struct {
	cfg     DatasetsConfig
	clients *nodeClients

	mu      sync.Mutex
	entries map[string]*datasetEntry // keyed by dataset generation's head object
	lastGen uint64
	// lostSeq counts, per node ID, the times the node was lost (a silent node, or a process
	// replaced by a restart): a partition a node made before its count moved is not counted on.
	lostSeq map[string]uint64
}

// datasetEntry is the registry's record of one dataset generation.
type datasetEntry struct {
	job     DatasetJob
	ds      *memcat.Dataset
	created time.Time
	reuses  int64
	// owners[i] is the node holding partition i ("" while it is being made again).
	owners []Node
	// ownerSeq[i] is the owner's lostSeq when it made partition i.
	ownerSeq []uint64
	// pending[i] is set while partition i is being made again.
	pending []bool
}

// NewDatasets returns an empty registry.
func NewDatasets(cfg DatasetsConfig) *Datasets {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Datasets{cfg: cfg, clients: newNodeClients(cfg.Key), entries: map[string]*datasetEntry{}, lostSeq: map[string]uint64{}}
}

// AliveNodes counts the data nodes alive now (not suspect): those new partitions go to.
func (d *Datasets) AliveNodes() int { return len(d.aliveNodes()) }

// Close closes the registry's connections to data nodes.
func (d *Datasets) Close() { d.clients.closeAll() }

// Lookup returns the dataset held under name.
func (d *Datasets) Lookup(name string) (DatasetInfo, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.entryLocked(name)
	if e == nil {
		return DatasetInfo{}, false
	}
	return e.info(), true
}

// ByFingerprint returns a ready dataset whose plan has the given fingerprint.
func (d *Datasets) ByFingerprint(fingerprint string) (DatasetInfo, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.entries {
		if e.job.Fingerprint == fingerprint && d.currentLocked(e) {
			if info := e.info(); info.State == DatasetReady {
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
	if e == nil || e.job.Fingerprint != fingerprint || e.info().State != DatasetReady {
		d.mu.Unlock()
		return DatasetInfo{}, false
	}
	e.reuses++
	info := e.info()
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
			out = append(out, e.info())
		}
	}
	slices.SortFunc(out, func(a, b DatasetInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Create materializes job on the alive data nodes and attaches the dataset to the catalog. When
// a complete dataset of that name already has the job's fingerprint, it is reused: nothing is
// read and the result has Reused set. A name held by a different dataset is an
// errs.AlreadyExists error unless job.Replace; a table or view of that name always is. progress
// (may be nil) is called after each partition is made.
func (d *Datasets) Create(ctx context.Context, job DatasetJob, progress func(Progress)) (DatasetInfo, error) {
	if len(job.Parts) == 0 {
		return DatasetInfo{}, errs.Internalf("dataset %q has no partitions", job.Name)
	}
	if info, ok := d.Reuse(job.Name, job.Fingerprint, progress); ok {
		return info, nil
	}
	d.mu.Lock()
	if e := d.entryLocked(job.Name); e != nil {
		if !job.Replace {
			d.mu.Unlock()
			return DatasetInfo{}, errs.AlreadyExistsf("dataset %q already exists with a different definition or snapshot; drop it or replace it", job.Name)
		}
	}
	gen := uint64(time.Now().UnixNano())
	if gen <= d.lastGen {
		gen = d.lastGen + 1
	}
	d.lastGen = gen
	d.mu.Unlock()
	if _, err := d.cfg.Catalog.Table(ctx, job.Name); err == nil {
		if _, isDataset := d.cfg.Catalog.Dataset(job.Name); !isDataset {
			return DatasetInfo{}, errs.AlreadyExistsf("table %q already exists", job.Name)
		}
	}

	n := len(job.Parts)
	e := &datasetEntry{job: job, ds: memcat.NewDataset(job.Name, gen, job.ResultSchema, n), created: time.Now(), owners: make([]Node, n), ownerSeq: make([]uint64, n), pending: make([]bool, n)}
	nodes := d.aliveNodes()
	if len(nodes) == 0 {
		return DatasetInfo{}, errs.Unavailablef("no data node is alive to hold dataset %q", job.Name)
	}
	all := make([]int, len(job.Parts))
	for i := range all {
		all[i] = i
	}
	var (
		progMu sync.Mutex
		prog   = Progress{Partitions: len(job.Parts)}
	)
	err := d.materialize(ctx, e, all, nodes, func(st PartitionStats) {
		progMu.Lock()
		defer progMu.Unlock()
		prog.Done++
		prog.Rows += st.Rows
		prog.Bytes += st.Bytes
		if progress != nil {
			progress(prog)
		}
	})
	if err != nil {
		d.dropOnNodes(e)
		return DatasetInfo{}, fmt.Errorf("materializing dataset %q: %w", job.Name, err)
	}
	d.mu.Lock()
	old, err := d.cfg.Catalog.AttachDataset(e.ds, job.Replace)
	if err == nil {
		d.entries[entryKey(e)] = e
		if old != nil {
			if oe, ok := d.entries[entryKeyOf(old)]; ok {
				delete(d.entries, entryKeyOf(old))
				defer d.dropOnNodes(oe)
			}
		}
	}
	info := e.info()
	d.mu.Unlock()
	if err != nil {
		d.dropOnNodes(e)
		return DatasetInfo{}, err
	}
	// A node lost while the dataset was being made was not seen by NodeChanged: make its
	// partitions again now.
	d.rebuild()
	d.cfg.Logger.Info("dataset materialized", "dataset", job.Name, "generation", gen, "partitions", info.Partitions, "rows", info.Rows, "bytes", info.Bytes, "nodes", info.Nodes)
	return info, nil
}

// Drop detaches the named dataset and frees its partitions on the nodes. It reports false when
// no dataset has that name (a table may).
func (d *Datasets) Drop(name string) bool {
	d.mu.Lock()
	e := d.entryLocked(name)
	if e != nil {
		delete(d.entries, entryKey(e))
		d.cfg.Catalog.DetachDataset(name, e.ds.Generation())
	}
	d.mu.Unlock()
	if e == nil {
		return false
	}
	d.dropOnNodes(e)
	return true
}

// NodeChanged applies a membership event to the registry; call it from the membership's
// OnChange for every event. Only EventLost moves data: every partition the lost process held is
// made again on the alive nodes (until then reading it fails with a retryable Unavailable
// error), and calls in flight to it are cut off. A suspect node keeps its partitions, and reads
// still go to it; it only gets no new ones. A node that joins (new, restarted, or registering
// again after it was lost) holds nothing the registry counts on: what it held before the loss
// was rebuilt elsewhere, and is not used again. Its joining is a chance to make again the
// partitions whose earlier rebuild failed. It returns at once and rebuilds in the background.
func (d *Datasets) NodeChanged(e Event) {
	switch e.Kind {
	case EventLost:
		// Calls in flight to a node gone silent are cut off, so they move to other nodes. A
		// process replaced by a restart at the same address keeps the connection: it reconnects
		// to the new process, and calls made to that are not cut off.
		if now, ok := d.cfg.Membership.Node(e.Node.ID); !ok || now.State == StateLost || now.Addr != e.Node.Addr {
			d.clients.forget(e.Node.Addr)
		}
		d.mu.Lock()
		d.lostSeq[e.Node.ID]++
		d.mu.Unlock()
		d.rebuild()
	case EventJoined:
		d.rebuild()
	}
}

// rebuild makes again, in the background, every partition of a held dataset that has no owner
// or whose owner was lost since making it, unless it is being made already.
func (d *Datasets) rebuild() {
	type rebuild struct {
		e     *datasetEntry
		parts []int
	}
	var work []rebuild
	d.mu.Lock()
	for _, e := range d.entries {
		var parts []int
		for i, owner := range e.owners {
			if e.pending[i] || (owner.ID != "" && d.lostSeq[owner.ID] == e.ownerSeq[i]) {
				continue
			}
			e.owners[i] = Node{}
			e.pending[i] = true
			p := e.ds.Parts()[i]
			p.Fetch = nil
			_ = e.ds.SetPart(i, p)
			parts = append(parts, i)
		}
		if len(parts) > 0 {
			work = append(work, rebuild{e, parts})
		}
	}
	d.mu.Unlock()
	for _, w := range work {
		// A panic ends this rebuild (it is logged); its partitions stay unowned and are no
		// longer pending, so the next rebuild takes them up again.
		safe.Spawn("rebuilding dataset partitions", func() error {
			defer func() {
				d.mu.Lock()
				for _, p := range w.parts {
					w.e.pending[p] = false
				}
				d.mu.Unlock()
			}()
			log := d.cfg.Logger.With("dataset", w.e.job.Name, "generation", w.e.ds.Generation(), "partitions", w.parts)
			log.Warn("making again the dataset partitions of a lost data node")
			// Retry until the partitions are made or the dataset is no longer held: nothing
			// else would make them again while the nodes stay as they are.
			for wait := time.Second; ; wait = min(2*wait, maxRebuildWait) {
				nodes := d.aliveNodes()
				err := errs.Unavailablef("no data node is alive")
				if len(nodes) > 0 {
					err = d.materialize(context.Background(), w.e, w.e.unowned(&d.mu, w.parts), nodes, nil)
				}
				if err == nil {
					log.Info("dataset partitions made again")
					return nil
				}
				log.Error("making dataset partitions again failed; retrying", "err", err, "retry_in", wait)
				time.Sleep(wait)
				d.mu.Lock()
				held := d.entries[entryKey(w.e)] == w.e
				d.mu.Unlock()
				if !held {
					return nil
				}
			}
		}, nil)
	}
}

// unowned returns the partitions among parts that no node holds (mu guards e).
func (e *datasetEntry) unowned(mu *sync.Mutex, parts []int) []int {
	mu.Lock()
	defer mu.Unlock()
	var out []int
	for _, p := range parts {
		if e.owners[p].ID == "" {
			out = append(out, p)
		}
	}
	return out
}

// materialize makes the given partitions of e on nodes: each partition goes to the node with the
// fewest bytes placed so far (largest partitions first), the nodes work in parallel, and a
// partition whose node fails is tried on another alive node.
func (d *Datasets) materialize(ctx context.Context, e *datasetEntry, parts []int, nodes []Node, done func(PartitionStats)) error {
	load := map[string]int64{}
	d.mu.Lock()
	for i, o := range e.owners {
		if o.ID != "" {
			load[o.ID] += max(e.job.Parts[i].Bytes, 1)
		}
	}
	d.mu.Unlock()
	order := slices.Clone(parts)
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(e.job.Parts[b].Bytes, e.job.Parts[a].Bytes) })
	queues := map[string][]int{}
	byID := map[string]Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	for _, p := range order {
		least := nodes[0].ID
		for _, n := range nodes[1:] {
			if load[n.ID] < load[least] {
				least = n.ID
			}
		}
		queues[least] = append(queues[least], p)
		load[least] += max(e.job.Parts[p].Bytes, 1)
	}
	g, gctx := errgroup.WithContext(ctx)
	for id, queue := range queues {
		safe.Go(g, "dataset materialization", func() error {
			for _, p := range queue {
				if err := d.makePart(gctx, e, p, byID[id], done); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// makePart makes partition p of e on node n, moving to another alive node when n fails with an
// error that is not the query's fault.
func (d *Datasets) makePart(ctx context.Context, e *datasetEntry, p int, n Node, done func(PartitionStats)) error {
	spec := e.job.Parts[p]
	req := MaterializeRequest{
		Dataset: e.job.Name, Generation: e.ds.Generation(), Partitions: len(e.job.Parts), Partition: p,
		SQL: e.job.SQL, Catalog: e.job.Catalog, Schema: e.job.Schema, Pins: e.job.Pins,
		Tasks: spec.Tasks, Whole: spec.Whole, Stored: e.job.Stored,
	}
	body, err := json.Marshal(req)
	if err != nil {
		return errs.Internalf("materialize request: %v", err)
	}
	tried := map[string]bool{}
	for attempt := 0; ; attempt++ {
		tried[n.ID] = true
		d.mu.Lock()
		seq := d.lostSeq[n.ID]
		d.mu.Unlock()
		var stats PartitionStats
		err := d.clients.action(ctx, n.Addr, ActionMaterialize, body, &stats)
		if err == nil {
			d.mu.Lock()
			if d.lostSeq[n.ID] == seq {
				e.owners[p], e.ownerSeq[p] = n, seq
				_ = e.ds.SetPart(p, memcat.Part{Rows: stats.Rows, Bytes: stats.Bytes, Location: n.Addr, Fetch: d.fetcher(e, p, n.Addr)})
				d.mu.Unlock()
				if done != nil {
					done(stats)
				}
				return nil
			}
			d.mu.Unlock()
			err = errs.Unavailablef("data node %s was lost while it made the partition", n.ID)
		}
		if !nodeFailed(ctx, err) {
			return fmt.Errorf("partition %d on data node %s: %w", p, n.ID, err)
		}
		next, ok := d.otherNode(tried)
		if !ok || attempt+1 >= maxMaterializeAttempts {
			// The nodes failed, not the query: retrying later may succeed.
			return errs.Unavailablef("partition %d on data node %s: %s", p, n.ID, status.Convert(err).Message())
		}
		d.cfg.Logger.Warn("data node failed to make a partition; trying another", "dataset", e.job.Name, "partition", p, "node", n.ID, "next", next.ID, "err", err)
		n = next
	}
}

// fetcher reads partition p of e from the node at addr, for queries the head runs itself.
func (d *Datasets) fetcher(e *datasetEntry, p int, addr string) func(context.Context, []int) (array.RecordReader, error) {
	return func(ctx context.Context, columns []int) (array.RecordReader, error) {
		raw, err := EncodePartitionTicket(d.cfg.Key, PartitionTicket{
			Dataset: e.job.Name, Generation: e.ds.Generation(), Partition: p, Columns: columns,
			Expires: time.Now().Add(DefaultPartitionTicketTTL),
		})
		if err != nil {
			return nil, err
		}
		rdr, err := d.clients.doGet(ctx, addr, raw)
		if err != nil && nodeFailed(ctx, err) {
			return nil, errs.Unavailablef("reading partition %d of dataset %q from data node %s: %s; a lost node's partitions are rebuilt on the others, retry shortly", p, e.job.Name, addr, status.Convert(err).Message())
		}
		return rdr, err
	}
}

// dropOnNodes frees e on every node that may hold it: alive and suspect ones.
func (d *Datasets) dropOnNodes(e *datasetEntry) {
	body, _ := json.Marshal(DropRequest{Dataset: e.job.Name, Generation: e.ds.Generation()})
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

// aliveNodes lists the nodes new partitions may be placed on (PlacementNodes).
func (d *Datasets) aliveNodes() []Node { return PlacementNodes(d.cfg.Membership.Nodes()) }

// otherNode picks an alive node not in tried.
func (d *Datasets) otherNode(tried map[string]bool) (Node, bool) {
	for _, n := range d.aliveNodes() {
		if !tried[n.ID] {
			return n, true
		}
	}
	return Node{}, false
}

// entryLocked returns the entry of the dataset attached under name.
func (d *Datasets) entryLocked(name string) *datasetEntry {
	ds, ok := d.cfg.Catalog.Dataset(name)
	if !ok {
		return nil
	}
	return d.entries[entryKeyOf(ds)]
}

// currentLocked reports whether e is the generation attached under its name.
func (d *Datasets) currentLocked(e *datasetEntry) bool {
	ds, ok := d.cfg.Catalog.Dataset(e.job.Name)
	return ok && ds == e.ds
}

func entryKey(e *datasetEntry) string { return entryKeyOf(e.ds) }

func entryKeyOf(ds *memcat.Dataset) string { return fmt.Sprintf("%s@%d", ds.Name(), ds.Generation()) }

func (e *datasetEntry) info() DatasetInfo {
	rows, bytes := e.ds.Totals()
	info := DatasetInfo{
		Name: e.job.Name, Generation: e.ds.Generation(), Fingerprint: e.job.Fingerprint, Source: e.job.Source,
		SQL: e.job.SQL, Pins: e.job.Pins, Partitions: len(e.job.Parts), Rows: rows, Bytes: bytes,
		State: DatasetReady, Created: e.created, Hits: e.reuses,
	}
	nodes := map[string]bool{}
	missing := 0
	for _, o := range e.owners {
		if o.ID == "" {
			missing++
			continue
		}
		nodes[o.ID] = true
	}
	for id := range nodes {
		info.Nodes = append(info.Nodes, id)
	}
	slices.Sort(info.Nodes)
	if missing > 0 {
		info.State = DatasetRebuilding
	}
	return info
}

// retryable reports whether a failed node call may succeed on another node: the node is gone,
// overloaded or out of memory, rather than the query being wrong.
func retryable(err error) bool {
	switch codeOf(err) {
	case "Unavailable", "ResourceExhausted", "DeadlineExceeded", "Aborted", "Internal", "Unknown":
		return true
	}
	return false
}

// nodeFailed reports whether a call to a node failed for the node's sake rather than the
// caller's: retryable, or canceled although ctx was not (the node's connection was closed because
// it was marked lost).
func nodeFailed(ctx context.Context, err error) bool {
	return retryable(err) || (codeOf(err) == "Canceled" && ctx.Err() == nil)
}

// nodeClients keeps one Flight client per data node address. Its actions are signed with key,
// the cluster secret.
type nodeClients struct {
	key     []byte
	mu      sync.Mutex
	clients map[string]flight.Client
}

func newNodeClients(key []byte) *nodeClients {
	return &nodeClients{key: key, clients: map[string]flight.Client{}}
}

// client returns the client for addr, dialing it on first use.
func (c *nodeClients) client(addr string) (flight.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[addr]; ok {
		return cl, nil
	}
	cl, err := dialNode(addr)
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
		return err
	}
	var last []byte
	for {
		res, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
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
		return nil, err
	}
	return flight.NewRecordReader(stream)
}
