package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
	"github.com/cachedb/cachedb/sql"
)

// Training reads: one reader's share of one epoch of a dataset, in the epoch's shuffled order
// (cluster.EpochOrder, cluster.EpochReader). The head plans a read into segments, each a
// stretch of the reader's share whose rows one data node holds; the node that holds them
// produces a segment from memory (node.Runtime.ReadEpoch).

// epochOrdersKept is how many epoch orders the head keeps made for planning reads.
const epochOrdersKept = 8

// EpochRequest is what a training read asks for besides the columns.
type EpochRequest struct {
	Seed    uint64
	Epoch   int64
	Shuffle bool
	// Mixing lays the partitions into the epoch (cluster.EpochMixing); ChunkRows and
	// WindowRows size the shuffle (cluster.EpochOrder).
	Mixing                cluster.EpochMixing
	ChunkRows, WindowRows int
	// Generation, when not 0, is the dataset generation the job reads: a read of a dataset made
	// again since (another generation under the name) is refused instead of reading other rows.
	Generation uint64
	// OrderKey, when not "", is the order key (EpochPlan.OrderKey) the job reads: a read of a
	// dataset whose order is another is refused. Unlike Generation it survives the dataset
	// being made again from the same definition into the same partition row counts.
	OrderKey string
	// NodeStreams plans one segment per data node instead of one per stretch held by one node
	// (EpochPlan.NodeStreams).
	NodeStreams bool
	Reader      cluster.EpochReader
}

// DefaultEpochRequest is a lone reader of epoch 0, shuffled with seed 0.
func DefaultEpochRequest() EpochRequest {
	return EpochRequest{
		Shuffle: true, ChunkRows: cluster.DefaultChunkRows, WindowRows: cluster.DefaultWindowRows,
		Reader: cluster.EpochReader{WorldSize: 1, NumWorkers: 1},
	}
}

// EpochOptionNames lists the options a training read takes, as ParseEpochOptions reads them.
var EpochOptionNames = []string{"seed", "epoch", "shuffle", "mixing", "chunk_rows", "window_rows", "rank", "world_size", "worker", "num_workers", "batch_size", "worker_batches", "offset", "start", "shares", "generation", "order_key", "resume", "node_streams"}

// ParseEpochOptions reads a training read's options (names as in EpochOptionNames, values as
// text) over DefaultEpochRequest. An unknown name or a value that is not a number of the
// option's kind is errs.InvalidInput naming it; numbers out of range are refused by
// EpochReader.Validate (here) and cluster.NewEpochOrder (when planned).
//
// Every read mixes by blocks unless it asks for mixing=windows (the order a client reading
// ordered endpoints takes from one node at a time), whose windows are DefaultWindowsWindowRows
// rows unless window_rows is given: the same options give every client the same order.
func ParseEpochOptions(opts map[string]string) (EpochRequest, error) {
	req := DefaultEpochRequest()
	_, windowGiven := opts["window_rows"]
	for _, name := range slices.Sorted(maps.Keys(opts)) {
		value := strings.TrimSpace(opts[name])
		var err error
		count := func(dst *int) {
			var v int64
			v, err = strconv.ParseInt(value, 10, 32)
			*dst = int(v)
		}
		switch name {
		case "seed":
			req.Seed, err = strconv.ParseUint(value, 10, 64)
		case "epoch":
			req.Epoch, err = strconv.ParseInt(value, 10, 64)
		case "shuffle":
			req.Shuffle, err = strconv.ParseBool(value)
		case "mixing":
			req.Mixing, err = cluster.ParseEpochMixing(strings.ToLower(value))
		case "chunk_rows":
			count(&req.ChunkRows)
		case "window_rows":
			count(&req.WindowRows)
		case "rank":
			count(&req.Reader.Rank)
		case "world_size":
			count(&req.Reader.WorldSize)
		case "worker":
			count(&req.Reader.Worker)
		case "num_workers":
			count(&req.Reader.NumWorkers)
		case "batch_size":
			count(&req.Reader.BatchSize)
		case "worker_batches":
			count(&req.Reader.WorkerBatches)
		case "offset":
			req.Reader.Offset, err = strconv.ParseInt(value, 10, 64)
		case "start":
			req.Reader.Start, err = strconv.ParseInt(value, 10, 64)
		case "generation":
			req.Generation, err = strconv.ParseUint(value, 10, 64)
		case "shares":
			req.Reader.Shares, err = cluster.ParseShareMode(strings.ToLower(value))
		case "order_key":
			req.OrderKey = value
		case "node_streams":
			req.NodeStreams, err = strconv.ParseBool(value)
		case "resume":
			req.Reader.Resumed, err = ParseResume(value)
		default:
			return req, errs.Invalidf("unknown training read option %q; the options are %s", name, strings.Join(EpochOptionNames, ", "))
		}
		if err != nil {
			return req, errs.Invalidf("training read option %s=%q: %v", name, value, err)
		}
	}
	if req.Mixing == cluster.MixWindows && !windowGiven {
		req.WindowRows = DefaultWindowsWindowRows
	}
	return req, req.Reader.Validate()
}

// DefaultWindowsWindowRows is the default window of a read mixed by windows: long stretches of
// one node each, so few endpoints (a window is read from one node, one window at a time).
const DefaultWindowsWindowRows = 1 << 16

// ParseResume reads the resume option: the earlier jobs of an epoch (cluster.EpochProgress),
// oldest first, separated by ";", each the rows its ranks consumed, by rank, separated by ",".
// "n*k" stands for k ranks that each consumed n rows: "3000*2;0,1500,1500" is a job of two
// ranks that each consumed 3,000 rows, then one of three ranks.
func ParseResume(text string) ([]cluster.EpochProgress, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	var out []cluster.EpochProgress
	ranks := 0
	for _, job := range strings.Split(text, ";") {
		var p cluster.EpochProgress
		for _, item := range strings.Split(job, ",") {
			value, times, repeated := strings.Cut(strings.TrimSpace(item), "*")
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return nil, err
			}
			k := int64(1)
			if repeated {
				if k, err = strconv.ParseInt(times, 10, 32); err != nil {
					return nil, err
				}
			}
			if k < 1 || int64(ranks)+k > cluster.MaxResumedRanks {
				return nil, fmt.Errorf("%q: ranks of earlier jobs must number 1 to %d in all", item, cluster.MaxResumedRanks)
			}
			ranks += int(k)
			for range k {
				p.Offsets = append(p.Offsets, n)
			}
		}
		if out = append(out, p); len(out) > cluster.MaxResumedJobs {
			return nil, fmt.Errorf("more than %d earlier jobs", cluster.MaxResumedJobs)
		}
	}
	return out, nil
}

// TrainingHint returns the options of a query's /*+ TRAINING(...) */ hint (nil when it has
// none).
func TrainingHint(sqlText string) (map[string]string, error) {
	return sql.TrainingHint(sqlText)
}

// EpochSlice is one segment of a training read: everything a data node needs to produce it.
type EpochSlice struct {
	Dataset    string
	Generation uint64
	// Columns index the dataset's schema; Names are their output names.
	Columns []int
	Names   []string
	// PartRows are the dataset's partition row counts, from which the node computes the order.
	PartRows []int64
	Request  EpochRequest
	// From and To bound the segment in the rank's share: the reader's positions in [From, To).
	From, To int64
	// Partitions are the partitions whose rows the segment reads, ascending: the node produces
	// the reader's rows in [From, To) that these partitions hold (all of them when it is empty).
	Partitions []int
}

// EpochPlan is a training read planned by the head.
type EpochPlan struct {
	Schema *arrow.Schema
	// Rows is how many rows the reader gets.
	Rows int64
	// Segments, read in order, give the reader's rows in order; Locations[i] is the data node
	// holding segment i's rows. With NodeStreams, each segment instead gives the rows one data
	// node holds, in order, all segments the same stretch of the reader's share; each of its
	// batches says which of the reader's rows it carries (node.epochStream's AppMetadata), and
	// the reader places them.
	Segments    []EpochSlice
	Locations   []string
	NodeStreams bool
	// Dataset and Generation name what the read reads; EpochRows is how many rows the epoch
	// has; OrderKey identifies the dataset's epoch orders (EpochOrderKey).
	Dataset    string
	Generation uint64
	EpochRows  int64
	OrderKey   string
}

// EpochOrderKey identifies what a dataset's epoch orders depend on besides the reader's seed,
// epoch and shuffle sizes: its definition (the fingerprint of its plan over its pinned
// snapshots) and its partition row counts. A dataset made again from the same definition into
// partitions of the same row counts holds the same rows in the same places (partitions are made
// deterministically), so it has the same key and the same orders, and a job or checkpoint of
// the old one may continue on it. The key covers the order's algorithm
// (cluster.EpochOrderVersion) and mixing, so a checkpoint made under another one is refused
// rather than continued in another order.
func EpochOrderKey(fingerprint string, partRows []int64, mixing cluster.EpochMixing) string {
	h := sha256.New()
	fmt.Fprintf(h, "v%d\x00", cluster.EpochOrderVersion)
	if mixing != cluster.MixBlocks {
		fmt.Fprintf(h, "%s\x00", mixing)
	}
	h.Write([]byte(fingerprint))
	for _, n := range partRows {
		fmt.Fprintf(h, "\x00%d", n)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// PlanEpochRead plans a training read of sqlText, which must select columns of one dataset
// (no WHERE, grouping, ordering or LIMIT: those belong in the dataset's definition).
func (e *Engine) PlanEpochRead(ctx context.Context, sqlText string, req EpochRequest) (*EpochPlan, error) {
	if err := req.Reader.Validate(); err != nil {
		return nil, err
	}
	d, cols, names, err := e.epochSource(ctx, sqlText)
	if err != nil {
		return nil, err
	}
	if req.Generation != 0 && req.Generation != d.Generation() {
		return nil, errs.NotFoundf("dataset %q generation %d is no longer held: it was made again (now generation %d); start the job again to read the new one", d.Name(), req.Generation, d.Generation())
	}
	if err := d.Gone(); err != nil {
		return nil, err
	}
	parts := d.Parts()
	partRows := make([]int64, len(parts))
	for i, p := range parts {
		if p.Location == "" && !p.Held() {
			return nil, errs.Unavailablef("partition %d of dataset %q is being made again after a data node was lost; try again shortly", i, d.Name())
		}
		partRows[i] = p.Rows
	}
	key, err := e.epochOrderKey(d, partRows, req.Mixing)
	if err != nil {
		return nil, err
	}
	if req.OrderKey != "" && req.OrderKey != key {
		return nil, errs.NotFoundf("dataset %q no longer has the order the read was planned on (order key %s, now %s): it was made again from another definition or snapshot, or into partitions of other sizes; a job or checkpoint of the old one cannot continue on it, start the epoch again", d.Name(), req.OrderKey, key)
	}
	order, err := e.epochOrders.Get(partRows, req.Seed, req.Epoch, req.Shuffle, req.Mixing, req.ChunkRows, req.WindowRows)
	if err != nil {
		return nil, err
	}
	if err := req.Reader.CheckShares(order.Rows()); err != nil {
		return nil, fmt.Errorf("dataset %q: %w", d.Name(), err)
	}
	plan := &EpochPlan{Schema: EpochSchema(d.Schema(), cols, names), Dataset: d.Name(), Generation: d.Generation(), EpochRows: order.Rows(), OrderKey: key}
	// The slice names its generation itself; the request's pins were checked here.
	req.Generation, req.OrderKey = 0, ""
	base := EpochSlice{Dataset: d.Name(), Generation: d.Generation(), Columns: cols, Names: names, PartRows: partRows, Request: req}
	if req.NodeStreams {
		planNodeStreams(plan, order, req.Reader, parts, base)
		e.countRead(d)
		return plan, nil
	}
	order.Stretches(req.Reader, 0, order.Rows(), func(t0, t1 int64, p int, _ int64) bool {
		plan.Rows += t1 - t0
		loc := parts[p].Location
		n := len(plan.Segments)
		if n == 0 || plan.Locations[n-1] != loc {
			seg := base
			seg.From = t0
			plan.Segments = append(plan.Segments, seg)
			plan.Locations = append(plan.Locations, loc)
			n++
		}
		seg := &plan.Segments[n-1]
		seg.To = t1
		if at, found := slices.BinarySearch(seg.Partitions, p); !found {
			seg.Partitions = slices.Insert(seg.Partitions, at, p)
		}
		return true
	})
	if len(plan.Segments) > MaxOrderedSegments {
		return nil, errs.Invalidf("dataset %q: this read's rows alternate between data nodes %d times (every batch mixes every partition), more endpoints than an ordered answer may have (%d); read it with node_streams=true (one endpoint per data node, rows placed by each batch's app_metadata), as the Python client does, or mixing=windows (a window of one partition at a time), or with fewer rows per reader",
			d.Name(), len(plan.Segments), MaxOrderedSegments)
	}
	e.countRead(d)
	return plan, nil
}

// MaxOrderedSegments bounds the endpoints of a training read planned in order (without
// NodeStreams): the runs of an epoch alternate between the nodes holding their partitions, so a
// large read of a dataset on several nodes would answer with a FlightInfo too large to send. A
// variable for tests.
var MaxOrderedSegments = 1 << 14

// countRead counts a planned read of d: every read a reader plans counts, as a query the head
// prepares does.
func (e *Engine) countRead(d *memcat.Dataset) {
	if e.datasets != nil {
		e.datasets.Hit(d.Name())
	}
}

// planNodeStreams plans the read as one segment per data node holding rows of it: each the
// reader's whole stretch [From, To) and the partitions of it that node holds, in the order the
// nodes first hold a row of it.
func planNodeStreams(plan *EpochPlan, order *cluster.EpochOrder, r cluster.EpochReader, parts []memcat.Part, base EpochSlice) {
	plan.NodeStreams = true
	from, to := int64(-1), int64(0)
	at := map[string]int{}
	order.Stretches(r, 0, order.Rows(), func(t0, t1 int64, p int, _ int64) bool {
		plan.Rows += t1 - t0
		if from < 0 {
			from = t0
		}
		to = t1
		loc := parts[p].Location
		i, ok := at[loc]
		if !ok {
			i = len(plan.Segments)
			at[loc] = i
			plan.Segments = append(plan.Segments, base)
			plan.Locations = append(plan.Locations, loc)
		}
		seg := &plan.Segments[i]
		if k, found := slices.BinarySearch(seg.Partitions, p); !found {
			seg.Partitions = slices.Insert(seg.Partitions, k, p)
		}
		return true
	})
	for i := range plan.Segments {
		plan.Segments[i].From, plan.Segments[i].To = from, to
	}
}

// epochOrderKey is d's EpochOrderKey: from the registry's fingerprint of its definition (none
// without a registry).
func (e *Engine) epochOrderKey(d *memcat.Dataset, partRows []int64, mixing cluster.EpochMixing) (string, error) {
	var fp string
	if e.datasets != nil {
		info, ok := e.datasets.Lookup(d.Name())
		if !ok || info.Generation != d.Generation() {
			return "", errs.Unavailablef("dataset %q was replaced or dropped while the read was planned; plan it again", d.Name())
		}
		fp = info.Fingerprint
	}
	return EpochOrderKey(fp, partRows, mixing), nil
}

// epochSource binds sqlText and returns the dataset it reads and the columns it selects.
func (e *Engine) epochSource(ctx context.Context, sqlText string) (*memcat.Dataset, []int, []string, error) {
	tables, err := e.tablesFor(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	stmt, err := e.bind(ctx, sqlText, tables, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	q, ok := stmt.(*planner.Query)
	if !ok || q.NumParams > 0 {
		return nil, nil, nil, errs.Invalidf("a training read is a SELECT of columns of one dataset, without placeholders")
	}
	notPlain := errs.Invalidf("a training read selects columns of one dataset as they are (SELECT a, b FROM dataset): filters, expressions, grouping, ordering and LIMIT belong in the dataset's definition")
	plan := planner.Optimize(q.Plan)
	var refs []planner.Expr
	if p, ok := plan.(*planner.Project); ok {
		refs, plan = p.Exprs, p.Input
	}
	scan, ok := plan.(*planner.Scan)
	if !ok || len(scan.Filters) > 0 || scan.Limit > 0 {
		return nil, nil, nil, notPlain
	}
	d, ok := scan.Table.(*memcat.Dataset)
	if !ok {
		return nil, nil, nil, errs.Invalidf("%q is not a dataset: training reads read datasets held by data nodes (make one with `cachedb load` or CREATE TABLE … AS SELECT on a server with data nodes)", scan.Name)
	}
	out := planner.OutputSchema(q.Plan)
	if refs == nil {
		return d, append([]int(nil), scan.Indices...), fieldNames(out), nil
	}
	cols := make([]int, len(refs))
	for i, r := range refs {
		ref, ok := r.(*planner.ColumnRef)
		if !ok {
			return nil, nil, nil, notPlain
		}
		at := -1
		for j, c := range scan.Columns {
			if c.ID == ref.ID {
				at = j
			}
		}
		if at < 0 {
			return nil, nil, nil, notPlain
		}
		cols[i] = scan.Indices[at]
	}
	return d, cols, fieldNames(out), nil
}

func fieldNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return names
}

// EpochSchema is the schema of a training read: the dataset's columns cols (of its schema ds)
// under the output names.
func EpochSchema(ds *arrow.Schema, cols []int, names []string) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = ds.Field(c)
		fields[i].Name = names[i]
	}
	return arrow.NewSchema(fields, nil)
}
