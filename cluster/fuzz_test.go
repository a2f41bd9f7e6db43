package cluster

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/cachedb/cachedb/cluster/ticket"
)

// fuzzTicketPayloads are JSON payloads of valid, extreme and malformed tickets.
func fuzzTicketPayloads(t any) [][]byte {
	valid, _ := json.Marshal(t)
	return [][]byte{
		valid,
		[]byte(`{"dataset":"d","generation":18446744073709551615,"partition":-9223372036854775808,"columns":[-1,9223372036854775807]}`),
		[]byte(`{"stage":{"query":"q","sql":"SELECT 1","nodes":["a"],"owners":[[0,-1,9223372036854775807]]},"shuffle":-1,"bucket":9223372036854775807,"node":-9223372036854775808}`),
		[]byte(`{"columns":[` + string(bytes.Repeat([]byte("1,"), 1000)) + `1]}`),
		[]byte(string(bytes.Repeat([]byte("["), 10000))),
		[]byte(`{"expires":"9999-12-31T23:59:59Z"}`),
		{},
	}
}

// fuzzSealed opens payload as sent (almost always refused) and sealed as a ticket of kind,
// and checks that what decodes encodes again to a ticket that decodes the same.
func fuzzSealed[P ticket.Payload](t *testing.T, payload []byte, decode func(*ticket.Keyring, []byte, time.Time) (P, error), encode func(*ticket.Keyring, P) ([]byte, error)) {
	key := ticket.NewKeyring([]byte("fuzz key"), nil)
	now := time.Now()
	_, _ = decode(key, payload, now)
	var zero P
	kind := zero.TicketKind()
	tk, err := decode(key, key.SealRaw(kind, kind.Version(), now.Add(time.Hour), payload), now)
	if err != nil {
		return
	}
	again, err := encode(key, tk)
	if err != nil {
		t.Fatalf("a decoded %s ticket does not encode: %v", kind, err)
	}
	if _, err := decode(key, again, now); err != nil {
		t.Fatalf("a re-encoded %s ticket does not decode: %v", kind, err)
	}
}

// FuzzPartitionTicket decodes arbitrary partition tickets, as sent and with a valid signature
// over arbitrary payloads. Errors are fine; panics are not, and what decodes re-encodes.
func FuzzPartitionTicket(f *testing.F) {
	for _, p := range fuzzTicketPayloads(PartitionTicket{Dataset: "d", Generation: 1, Columns: []int{0}}) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		fuzzSealed(t, payload, DecodePartitionTicket, EncodePartitionTicket)
	})
}

// FuzzShuffleTicket is FuzzPartitionTicket for shuffle tickets.
func FuzzShuffleTicket(f *testing.F) {
	st := Stage{Query: "q", SQL: "SELECT 1", Nodes: []string{"a", "b"}, Owners: [][]int{{0, 1}}}
	for _, p := range fuzzTicketPayloads(ShuffleTicket{Stage: st, Shuffle: 1, Bucket: 2, Node: 1}) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		fuzzSealed(t, payload, DecodeShuffleTicket, EncodeShuffleTicket)
	})
}
