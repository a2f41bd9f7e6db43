package cluster

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/rpcerr"
	"github.com/cachedb/cachedb/internal/stream"
)

// Stage is one distributed execution of a query: what every data node needs to plan the query
// alike (SQL, naming session, pinned table versions) and to find its peers. The head makes one
// per GetFlightInfo; every ticket of that execution carries it.
type Stage struct {
	// Query tells executions apart (random, made by the head): the shuffle buckets a node
	// produces belong to one execution.
	Query   string            `json:"query"`
	SQL     string            `json:"sql"`
	Catalog string            `json:"catalog,omitempty"`
	Schema  string            `json:"schema,omitempty"`
	Pins    map[string]string `json:"pins,omitempty"`
	// Nodes are the data node addresses taking part, by index.
	Nodes []string `json:"nodes"`
	// Owners gives, for each distributed scan of the plan (by number), the index of the node
	// that reads each of its tasks.
	Owners  [][]int   `json:"owners"`
	Expires time.Time `json:"expires"`
}

// ShuffleTicket asks a data node for what it produced of one bucket of one shuffle of a stage.
type ShuffleTicket struct {
	Stage   Stage `json:"stage"`
	Shuffle int   `json:"shuffle"`
	Bucket  int   `json:"bucket"`
	// Node is the index of the node asked (the producer).
	Node int `json:"node"`
}

// shuffleTicketPrefix starts every shuffle ticket (see partitionTicketPrefix).
var shuffleTicketPrefix = []byte("cachedb.shuffle/1:")

// IsShuffleTicket reports whether raw is meant to be a shuffle ticket.
func IsShuffleTicket(raw []byte) bool { return bytes.HasPrefix(raw, shuffleTicketPrefix) }

// EncodeShuffleTicket signs t with the cluster secret key.
func EncodeShuffleTicket(key []byte, t ShuffleTicket) ([]byte, error) {
	if len(key) == 0 {
		return nil, errs.Internalf("shuffle ticket: no cluster secret to sign it with")
	}
	payload, err := json.Marshal(t)
	if err != nil {
		return nil, errs.Internalf("shuffle ticket: %v", err)
	}
	out := append(append([]byte{}, shuffleTicketPrefix...), payload...)
	return append(out, mac(key, payload)...), nil
}

// DecodeShuffleTicket verifies raw against key and the clock, as DecodePartitionTicket does.
func DecodeShuffleTicket(key, raw []byte, now time.Time) (ShuffleTicket, error) {
	var t ShuffleTicket
	if len(key) == 0 {
		return t, errs.Invalidf("shuffle ticket cannot be verified: this node has no cluster secret")
	}
	body := bytes.TrimPrefix(raw, shuffleTicketPrefix)
	if len(body) <= sha256.Size || len(body) == len(raw) {
		return t, errs.Invalidf("shuffle ticket is malformed")
	}
	payload, sum := body[:len(body)-sha256.Size], body[len(body)-sha256.Size:]
	if !hmac.Equal(sum, mac(key, payload)) {
		return t, errs.Invalidf("shuffle ticket was not issued by this cluster (wrong cluster secret or altered ticket)")
	}
	if err := json.Unmarshal(payload, &t); err != nil {
		return t, errs.Invalidf("shuffle ticket is malformed: %v", err)
	}
	if now.After(t.Stage.Expires) {
		return t, errs.Invalidf("shuffle ticket expired at %s", t.Stage.Expires.Format(time.RFC3339))
	}
	return t, nil
}

// ShuffleSource produces shuffle buckets on a data node; the node's engine implements it.
type ShuffleSource interface {
	// ServeShuffle streams what this node produces of t's bucket, starting the shuffle's
	// producer for t's stage if it has not started (or its bucket was read already).
	ServeShuffle(ctx context.Context, t ShuffleTicket) (array.RecordReader, error)
	StageCanceler
}

// Shuffles fetches shuffle buckets from data nodes with tickets signed by the cluster secret.
// It is safe for concurrent use.
type Shuffles struct {
	key     []byte
	clients *nodeClients
}

// NewShuffles returns a fetcher signing with key.
func NewShuffles(key []byte) *Shuffles {
	return &Shuffles{key: key, clients: newNodeClients(key)}
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
	return rdr, err
}

// Close closes the connections to the data nodes.
func (s *Shuffles) Close() { s.clients.closeAll() }
