package cluster

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// fuzzTicketPayloads are JSON payloads of valid, extreme and malformed tickets.
func fuzzTicketPayloads(t any) [][]byte {
	valid, _ := json.Marshal(t)
	return [][]byte{
		valid,
		[]byte(`{"dataset":"d","generation":18446744073709551615,"partition":-9223372036854775808,"columns":[-1,9223372036854775807],"expires":"9999-12-31T23:59:59Z"}`),
		[]byte(`{"stage":{"query":"q","sql":"SELECT 1","nodes":["a"],"owners":[[0,-1,9223372036854775807]],"expires":"9999-12-31T23:59:59Z"},"shuffle":-1,"bucket":9223372036854775807,"node":-9223372036854775808}`),
		[]byte(`{"columns":[` + string(bytes.Repeat([]byte("1,"), 1000)) + `1]}`),
		[]byte(string(bytes.Repeat([]byte("["), 10000))),
		[]byte(`{"expires":"not a time"}`),
		{},
	}
}

// FuzzPartitionTicket decodes arbitrary partition tickets, as sent and with a valid signature
// over arbitrary payloads. Errors are fine; panics are not, and what decodes re-encodes.
func FuzzPartitionTicket(f *testing.F) {
	key := []byte("fuzz key")
	for _, p := range fuzzTicketPayloads(PartitionTicket{Dataset: "d", Generation: 1, Columns: []int{0}, Expires: time.Now().Add(time.Hour)}) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		now := time.Now()
		_, _ = DecodePartitionTicket(key, payload, now)
		signed := append(append(append([]byte{}, partitionTicketPrefix...), payload...), mac(key, payload)...)
		tk, err := DecodePartitionTicket(key, signed, now)
		if err != nil {
			return
		}
		if _, err := EncodePartitionTicket(key, tk); err != nil {
			t.Fatalf("a decoded ticket does not encode: %v", err)
		}
	})
}

// FuzzShuffleTicket is FuzzPartitionTicket for shuffle tickets.
func FuzzShuffleTicket(f *testing.F) {
	key := []byte("fuzz key")
	st := Stage{Query: "q", SQL: "SELECT 1", Nodes: []string{"a", "b"}, Owners: [][]int{{0, 1}}, Expires: time.Now().Add(time.Hour)}
	for _, p := range fuzzTicketPayloads(ShuffleTicket{Stage: st, Shuffle: 1, Bucket: 2, Node: 1}) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		now := time.Now()
		_, _ = DecodeShuffleTicket(key, payload, now)
		signed := append(append(append([]byte{}, shuffleTicketPrefix...), payload...), mac(key, payload)...)
		tk, err := DecodeShuffleTicket(key, signed, now)
		if err != nil {
			return
		}
		if _, err := EncodeShuffleTicket(key, tk); err != nil {
			t.Fatalf("a decoded ticket does not encode: %v", err)
		}
	})
}
