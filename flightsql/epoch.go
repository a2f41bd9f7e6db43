package flightsql

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/errs"
)

// Training reads (engine.PlanEpochRead) over Flight SQL. A query is a training read when it
// carries a /*+ TRAINING(...) */ hint or any call header named epochHeaderPrefix + option
// (dashes or underscores alike: cachedb-world-size, cachedb-world_size). Both may be given; an
// option set in both must agree. The answer has one endpoint per segment, located at the data
// node that holds it, in order (FlightInfo.ordered); each ticket carries its segment
// (trainingTicket), signed.

// epochHeaderPrefix starts the names of the call headers that carry training read options.
const epochHeaderPrefix = "cachedb-"

// epochOptions collects a query's training read options from its hint and the call headers;
// ok is false when the query is not a training read.
func epochOptions(ctx context.Context, query string) (opts map[string]string, ok bool, err error) {
	hint, err := engine.TrainingHint(query)
	if err != nil {
		return nil, false, err
	}
	opts = map[string]string{}
	for k, v := range hint {
		opts[k] = v
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for key, values := range md {
		name, found := strings.CutPrefix(strings.ToLower(key), epochHeaderPrefix)
		name = strings.ReplaceAll(name, "-", "_")
		if !found || !slices.Contains(engine.EpochOptionNames, name) || len(values) == 0 {
			continue
		}
		value := values[len(values)-1]
		if prev, dup := opts[name]; dup && prev != value {
			return nil, false, errs.Invalidf("training read option %s is %q in the query's hint and %q in a call header", name, prev, value)
		}
		opts[name] = value
	}
	return opts, hint != nil || len(opts) > 0, nil
}

// epochInfo answers a training read: its schema, and one located endpoint per segment.
func (s *Server) epochInfo(ctx context.Context, desc *flight.FlightDescriptor, query string, opts map[string]string) (*flight.FlightInfo, error) {
	req, err := engine.ParseEpochOptions(opts)
	if err != nil {
		return nil, err
	}
	plan, err := s.eng.PlanEpochRead(ctx, query, req)
	if err != nil {
		return nil, err
	}
	meta, err := json.Marshal(epochInfoMetadata{Dataset: plan.Dataset, Generation: plan.Generation, OrderKey: plan.OrderKey, EpochRows: plan.EpochRows, NodeStreams: plan.NodeStreams})
	if err != nil {
		return nil, errs.Internalf("training read metadata: %v", err)
	}
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(plan.Schema, s.opts.Alloc),
		FlightDescriptor: desc,
		TotalRecords:     plan.Rows,
		TotalBytes:       -1,
		Ordered:          !plan.NodeStreams,
		AppMetadata:      meta,
	}
	expires := s.now().Add(s.opts.TicketTTL)
	for i, seg := range plan.Segments {
		tt := newTrainingTicket(seg)
		tt.User = userOf(ctx)
		tk, err := s.sealTicket(expires, tt)
		if err != nil {
			return nil, err
		}
		epMeta, err := json.Marshal(epochEndpointMetadata{Partitions: seg.Partitions})
		if err != nil {
			return nil, errs.Internalf("training read metadata: %v", err)
		}
		ep := &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: tk}, AppMetadata: epMeta}
		if loc := plan.Locations[i]; loc != "" {
			ep.Location = []*flight.Location{{Uri: s.locationURI(loc)}}
		}
		info.Endpoint = append(info.Endpoint, ep)
	}
	return info, nil
}

// epochInfoMetadata is the app_metadata (JSON) of a training read's FlightInfo: what it reads,
// so that a client can pin its later reads and its checkpoints to the dataset's order
// (engine.EpochOrderKey) rather than to one generation.
type epochInfoMetadata struct {
	Dataset    string `json:"dataset"`
	Generation uint64 `json:"generation"`
	OrderKey   string `json:"order_key"`
	EpochRows  int64  `json:"epoch_rows"`
	// NodeStreams says the endpoints are one per data node, read at once, each batch placed
	// by its app_metadata (engine.EpochPlan.NodeStreams), not read one after another.
	NodeStreams bool `json:"node_streams,omitempty"`
}

// epochEndpointMetadata is the app_metadata (JSON) of a training read's endpoint: the dataset
// partitions it reads, for a client to name when the node holding them cannot be reached.
type epochEndpointMetadata struct {
	Partitions []int `json:"partitions"`
}

// trainingTicket is the payload of a ticket.Training ticket: one segment of a training read
// (engine.EpochSlice), its options under the names a reader gives them (EpochOptionNames).
type trainingTicket struct {
	Dataset    string   `json:"dataset"`
	Generation uint64   `json:"generation"`
	Columns    []int    `json:"columns"`
	Names      []string `json:"names"`
	PartRows   []int64  `json:"part_rows"`
	Seed       uint64   `json:"seed,omitempty"`
	Epoch      int64    `json:"epoch,omitempty"`
	Shuffle    bool     `json:"shuffle,omitempty"`
	// Mixing is EpochRequest.Mixing (cluster.EpochMixing).
	Mixing     cluster.EpochMixing `json:"mixing,omitempty"`
	ChunkRows  int                 `json:"chunk_rows,omitempty"`
	WindowRows int                 `json:"window_rows,omitempty"`
	// PinnedGeneration is EpochRequest.Generation (0 once planned: the slice names its
	// generation itself).
	PinnedGeneration uint64            `json:"pinned_generation,omitempty"`
	WorldSize        int               `json:"world_size,omitempty"`
	Rank             int               `json:"rank,omitempty"`
	NumWorkers       int               `json:"num_workers,omitempty"`
	Worker           int               `json:"worker,omitempty"`
	BatchSize        int               `json:"batch_size,omitempty"`
	WorkerBatches    int               `json:"worker_batches,omitempty"`
	Offset           int64             `json:"offset,omitempty"`
	Start            int64             `json:"start,omitempty"`
	Shares           cluster.ShareMode `json:"shares,omitempty"`
	From             int64             `json:"from,omitempty"`
	To               int64             `json:"to,omitempty"`
	// Resumed is EpochReader.Resumed: per earlier job, its ranks' offsets.
	Resumed [][]int64 `json:"resumed,omitempty"`
	// PinnedOrderKey is EpochRequest.OrderKey ("" once planned, as PinnedGeneration).
	PinnedOrderKey string `json:"pinned_order_key,omitempty"`
	NodeStreams    bool   `json:"node_streams,omitempty"`
	// Partitions is EpochSlice.Partitions.
	Partitions []int `json:"partitions,omitempty"`
	// User is the login the ticket was issued to ("" without one); only that user redeems it.
	User string `json:"user,omitempty"`
}

// TicketKind makes trainingTicket the payload of ticket.Training tickets.
func (trainingTicket) TicketKind() ticket.Kind { return ticket.Training }

func newTrainingTicket(e engine.EpochSlice) trainingTicket {
	r, rd := e.Request, e.Request.Reader
	t := trainingTicket{
		Dataset: e.Dataset, Generation: e.Generation, Columns: e.Columns, Names: e.Names, PartRows: e.PartRows,
		Seed: r.Seed, Epoch: r.Epoch, Shuffle: r.Shuffle, Mixing: r.Mixing, ChunkRows: r.ChunkRows, WindowRows: r.WindowRows, PinnedGeneration: r.Generation,
		WorldSize: rd.WorldSize, Rank: rd.Rank, NumWorkers: rd.NumWorkers, Worker: rd.Worker, BatchSize: rd.BatchSize,
		WorkerBatches: rd.WorkerBatches, Offset: rd.Offset, Start: rd.Start, Shares: rd.Shares, From: e.From, To: e.To,
		PinnedOrderKey: r.OrderKey, Partitions: e.Partitions, NodeStreams: r.NodeStreams,
	}
	for _, p := range rd.Resumed {
		t.Resumed = append(t.Resumed, p.Offsets)
	}
	return t
}

// maxTrainingCount bounds the counts and indexes of a training ticket, and maxTrainingRows its
// partition row counts: the ticket is signed, but no ticket may make a data node allocate
// without limit.
const (
	maxTrainingCount = 1 << 30
	maxTrainingRows  = 1 << 62
)

// slice returns the segment t carries; a count out of range is an errs.InvalidInput error.
func (t trainingTicket) slice() (engine.EpochSlice, error) {
	if len(t.Names) != len(t.Columns) {
		return engine.EpochSlice{}, errs.Invalidf("training ticket is malformed: %d columns and %d names", len(t.Columns), len(t.Names))
	}
	counts := append([]int{t.ChunkRows, t.WindowRows, t.WorldSize, t.Rank, t.NumWorkers, t.Worker, t.BatchSize, t.WorkerBatches, int(t.Shares), int(t.Mixing)}, t.Columns...)
	for _, n := range counts {
		if n < 0 || n > maxTrainingCount {
			return engine.EpochSlice{}, errs.Invalidf("training ticket is malformed: %d is out of range", n)
		}
	}
	for _, n := range t.PartRows {
		if n < 0 || n > maxTrainingRows {
			return engine.EpochSlice{}, errs.Invalidf("training ticket is malformed: %d partition rows is out of range", n)
		}
	}
	var resumed []cluster.EpochProgress
	for _, offsets := range t.Resumed {
		resumed = append(resumed, cluster.EpochProgress{Offsets: offsets})
	}
	return engine.EpochSlice{
		Dataset: t.Dataset, Generation: t.Generation, Columns: t.Columns, Names: t.Names, PartRows: t.PartRows, Partitions: t.Partitions,
		Request: engine.EpochRequest{
			Seed: t.Seed, Epoch: t.Epoch, Shuffle: t.Shuffle, Mixing: t.Mixing, ChunkRows: t.ChunkRows, WindowRows: t.WindowRows, Generation: t.PinnedGeneration, OrderKey: t.PinnedOrderKey,
			NodeStreams: t.NodeStreams,
			Reader: cluster.EpochReader{
				WorldSize: t.WorldSize, Rank: t.Rank, NumWorkers: t.NumWorkers, Worker: t.Worker, BatchSize: t.BatchSize,
				WorkerBatches: t.WorkerBatches, Offset: t.Offset, Start: t.Start, Shares: t.Shares, Resumed: resumed,
			},
		},
		From: t.From, To: t.To,
	}, nil
}
