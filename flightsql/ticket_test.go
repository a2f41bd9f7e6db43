package flightsql

import (
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/errs"
)

func TestTicketRoundTrip(t *testing.T) {
	s := newTicketSigner(nil)
	now := time.Unix(1_700_000_000, 0)
	for _, want := range []statementTicket{
		{kind: ticketQuery, expires: now.Add(time.Minute), sql: "SELECT 1"},
		{kind: ticketQuery, expires: now.Add(time.Minute), sql: "SELECT 'ünïcødé', x FROM t WHERE y = '\x00'"},
		{kind: ticketEmpty, expires: now.Add(time.Minute)},
		{kind: ticketQuery, expires: now.Add(time.Minute), sql: "SELECT count(*) FROM t",
			stage: &ticketStage{query: "q2", nodes: []string{"n:1"}, owners: [][]int{{0}}, self: -1}},
		{kind: ticketQuery, expires: now.Add(time.Minute), sql: "SELECT a FROM t",
			stage:   &ticketStage{query: "q1", nodes: []string{"127.0.0.1:1", "127.0.0.1:2"}, owners: [][]int{{0, 1, 1}, {}, {1}}, self: 1},
			session: engine.Session{Catalog: "lake", Schema: "ns", Pins: map[string]string{"t": "@42", "ns.u": "@7"}}},
	} {
		got, err := s.decode(s.encode(want), now)
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", want, err)
		}
		if got.kind != want.kind || got.sql != want.sql || !got.expires.Equal(want.expires) ||
			!sameStage(got.stage, want.stage) || got.session.Catalog != want.session.Catalog ||
			got.session.Schema != want.session.Schema || !maps.Equal(got.session.Pins, want.session.Pins) {
			t.Errorf("round trip = %+v, want %+v", got, want)
		}
	}
}

func sameStage(a, b *ticketStage) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.query == b.query && a.self == b.self && slices.Equal(a.nodes, b.nodes) &&
		slices.EqualFunc(a.owners, b.owners, func(x, y []int) bool { return slices.Equal(x, y) })
}

// Servers given the same key accept each other's tickets: the head signs, data nodes verify.
func TestTicketKeySharedAcrossServers(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	head, node := newTicketSigner([]byte("cluster secret")), newTicketSigner([]byte("cluster secret"))
	raw := head.encode(statementTicket{kind: ticketQuery, expires: now.Add(time.Minute), sql: "SELECT 1",
		stage: &ticketStage{query: "q", nodes: []string{"a", "b"}, owners: [][]int{{1}}, self: 0}})
	if got, err := node.decode(raw, now); err != nil || got.stage == nil || len(got.stage.owners[0]) != 1 {
		t.Errorf("node refused the head's ticket: %+v %v", got, err)
	}
	if _, err := newTicketSigner([]byte("another secret")).decode(raw, now); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("a node with another key accepted the ticket: %v", err)
	}
}

func TestTicketRefusesForgedAndExpired(t *testing.T) {
	s := newTicketSigner(nil)
	now := time.Unix(1_700_000_000, 0)
	good := s.encode(statementTicket{kind: ticketQuery, expires: now.Add(time.Minute), sql: "SELECT 1"})
	tampered := append([]byte(nil), good...)
	tampered[ticketHeader] ^= 1 // change the SQL text
	other := newTicketSigner(nil).encode(statementTicket{kind: ticketQuery, expires: now.Add(time.Minute), sql: "SELECT 1"})

	tests := []struct {
		name string
		raw  []byte
		at   time.Time
	}{
		{"empty", nil, now},
		{"garbage", []byte("not a ticket at all, just some bytes that are long enough to pass"), now},
		{"tampered", tampered, now},
		{"other server", other, now},
		{"truncated", good[:len(good)-1], now},
		{"expired", good, now.Add(2 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.decode(tt.raw, tt.at)
			if err == nil {
				t.Fatal("decode accepted the ticket")
			}
			if errs.CategoryOf(err) != errs.InvalidInput {
				t.Errorf("category = %v, want invalid input (%v)", errs.CategoryOf(err), err)
			}
		})
	}
}

// A training read's segment survives the ticket, every field of it, and a ticket cut short
// anywhere is refused.
func TestEpochTicketRoundTrip(t *testing.T) {
	s := newTicketSigner(nil)
	now := time.Unix(1_700_000_000, 0)
	slice := engine.EpochSlice{
		Dataset: "feats", Generation: 9, Columns: []int{3, 0}, Names: []string{"x", "label"}, PartRows: []int64{10, 0, 1 << 40},
		Request: engine.EpochRequest{Seed: 1<<64 - 1, Epoch: 5, Shuffle: true, ChunkRows: 64, WindowRows: 4096,
			Reader: cluster.EpochReader{WorldSize: 4, Rank: 3, NumWorkers: 2, Worker: 1, BatchSize: 32, Offset: 100, Start: 164, Shares: cluster.SharesPad}},
		From: 7, To: 1 << 33,
	}
	raw := s.encode(statementTicket{kind: ticketEpoch, expires: now.Add(time.Minute), epoch: &slice})
	got, err := s.decode(raw, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.kind != ticketEpoch || got.epoch == nil || !reflect.DeepEqual(*got.epoch, slice) {
		t.Fatalf("round trip = %+v, want %+v", got.epoch, slice)
	}
	for n := range len(raw) - ticketMACBytes {
		// Re-signed prefixes: well-formed signatures over truncated bodies.
		cut := append([]byte(nil), raw[:n]...)
		if _, err := s.decode(append(cut, s.mac(cut)...), now); err == nil {
			t.Fatalf("a ticket cut to %d bytes decoded", n)
		}
	}
}
