package cluster

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/rpcerr"
	"github.com/cachedb/cachedb/internal/stream"
)

// Stage is one distributed execution of a query: what every data node needs to plan the query
// alike (SQL, naming session, pinned table versions) and to find its peers. The head makes one
// per GetFlightInfo; every ticket of that execution carries it, and expires with it.
type Stage struct {
	// Query tells executions apart (random, made by the head): the shuffle buckets a node
	// produces belong to one execution.
	Query   string            `json:"query,omitempty"`
	SQL     string            `json:"sql"`
	Catalog string            `json:"catalog,omitempty"`
	Schema  string            `json:"schema,omitempty"`
	Pins    map[string]string `json:"pins,omitempty"`
	// MemoryLimit bounds what the execution reserves in each process it runs in, in bytes (0:
	// only the process's limit); Timeout bounds each statement ticket of it from its DoGet (0:
	// only the server's). Both are the session's limits (engine.Session) where it was planned.
	MemoryLimit int64         `json:"memory_limit,omitempty"`
	Timeout     time.Duration `json:"timeout,omitempty"`
	// SQLMode is the session's sql_mode, which @@sql_mode reports (nil: the server's default).
	// The SQL is already in MySQL's default dialect: the head rewrote it under ANSI_QUOTES.
	SQLMode *string `json:"sql_mode,omitempty"`
	// DatasetRows are, for the datasets among Pins (by pin name), the row counts the head
	// planned with: a data node, which holds only some partitions, plans with them too, so that
	// it makes the same cost-based choices (join order, build sides) and numbers the
	// distributed scans alike.
	DatasetRows map[string]int64 `json:"dataset_rows,omitempty"`
	// Datasets describe, by name, the datasets the query reads that some node of Nodes holds
	// no partition of (a dataset of fewer partitions than there are nodes): such a node attaches
	// the dataset without rows to plan the query (node.Runtime knowDatasets).
	Datasets map[string]DatasetShape `json:"datasets,omitempty"`
	// Nodes are the data node addresses taking part, by index.
	Nodes []string `json:"nodes,omitempty"`
	// Owners gives, for each distributed scan of the plan (by number), the index of the node
	// that reads each of its tasks.
	Owners [][]int `json:"owners,omitempty"`
	// Analyze asks every process of the execution to measure each operator of its part (EXPLAIN
	// ANALYZE) and keep the measurements for ActionStageProfile.
	Analyze bool `json:"analyze,omitempty"`
	// Expires is when the execution's tickets expire; their envelopes carry it.
	Expires time.Time `json:"-"`
}

// ShuffleTicket asks a data node for what it produced of one bucket of one shuffle of a stage.
type ShuffleTicket struct {
	Stage   Stage `json:"stage"`
	Shuffle int   `json:"shuffle"`
	Bucket  int   `json:"bucket"`
	// Node is the index of the node asked (the producer).
	Node int `json:"node"`
}

// TicketKind makes ShuffleTicket the payload of ticket.Shuffle tickets.
func (ShuffleTicket) TicketKind() ticket.Kind { return ticket.Shuffle }

// EncodeShuffleTicket seals t with the cluster secret's current key; it expires with its stage.
func EncodeShuffleTicket(keys *ticket.Keyring, t ShuffleTicket) ([]byte, error) {
	return keys.Seal(t.Stage.Expires, t)
}

// DecodeShuffleTicket opens a shuffle ticket, as DecodePartitionTicket does.
func DecodeShuffleTicket(keys *ticket.Keyring, raw []byte, now time.Time) (ShuffleTicket, error) {
	t, expires, err := ticket.OpenAs[ShuffleTicket](keys, raw, now)
	t.Stage.Expires = expires
	return t, err
}

// ShuffleSource produces shuffle buckets on a data node; the node runtime implements it.
type ShuffleSource interface {
	// ServeShuffle streams what this node produces of t's bucket, starting the shuffle's
	// producer for t's stage if it has not started (or its bucket was read already).
	ServeShuffle(ctx context.Context, t ShuffleTicket) (array.RecordReader, error)
	StageCanceler
}

// Shuffles fetches shuffle buckets from data nodes with tickets signed by the cluster secret.
// It is safe for concurrent use.
type Shuffles struct {
	key     *ticket.Keyring
	clients *nodeClients
}

// NewShuffles returns a fetcher signing with key's current key, reaching the nodes in plaintext.
func NewShuffles(key *ticket.Keyring) *Shuffles { return NewShufflesOver(key, Transport{}) }

// NewShufflesOver returns a fetcher signing with key's current key, reaching the nodes over t.
func NewShufflesOver(key *ticket.Keyring, t Transport) *Shuffles {
	return &Shuffles{key: key, clients: newNodeClients(key, t)}
}

// Fetch streams what node t.Node of t.Stage produced of bucket t.Bucket of shuffle t.Shuffle.
// A node that cannot be reached is an errs.Unavailable error: the query can be retried.
func (s *Shuffles) Fetch(ctx context.Context, t ShuffleTicket) (array.RecordReader, error) {
	if t.Node < 0 || t.Node >= len(t.Stage.Nodes) {
		return nil, errs.Internalf("shuffle fetch from node %d of %d", t.Node, len(t.Stage.Nodes))
	}
	raw, err := EncodeShuffleTicket(s.key, t)
	if err != nil {
		return nil, err
	}
	addr := t.Stage.Nodes[t.Node]
	rdr, err := s.clients.doGet(ctx, addr, raw)
	if err != nil && ctx.Err() != nil {
		// The fetch was stopped by its own statement (canceled, past its deadline), not by
		// the node.
		return nil, stream.Stopped(ctx)
	}
	if err != nil && rpcerr.Retryable(ctx, err) {
		return nil, errs.Unavailablef("shuffle %d: data node %s did not answer: %v; retry the query", t.Shuffle, addr, err)
	}
	if err != nil {
		return nil, err
	}
	return shuffleCounter{rdr}, nil
}

// Close closes the connections to the data nodes.
func (s *Shuffles) Close() { s.clients.closeAll() }
