package cluster

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

var ticketKey = []byte("the cluster secret")

func sampleTicket(now time.Time) PartitionTicket {
	return PartitionTicket{Dataset: "feats", Generation: 1234567890123, Partition: 3, Columns: []int{4, 0, 2}, Expires: now.Add(time.Minute).UTC()}
}

func TestPartitionTicketRoundTrip(t *testing.T) {
	now := time.Now()
	want := sampleTicket(now)
	raw, err := EncodePartitionTicket(ticketKey, want)
	if err != nil {
		t.Fatal(err)
	}
	if !IsPartitionTicket(raw) {
		t.Fatal("an encoded ticket is not recognized as a partition ticket")
	}
	got, err := DecodePartitionTicket(ticketKey, raw, now)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Expires.Equal(want.Expires) {
		t.Errorf("expires %s, want %s", got.Expires, want.Expires)
	}
	got.Expires = want.Expires
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v, want %+v", got, want)
	}
	// Still good just before it expires.
	if _, err := DecodePartitionTicket(ticketKey, raw, want.Expires.Add(-time.Millisecond)); err != nil {
		t.Errorf("just before expiry: %v", err)
	}
	// Statement tickets (protobuf Any messages) are not partition tickets.
	if IsPartitionTicket([]byte("\n\x3atype.googleapis.com/arrow.flight.protocol.sql.TicketStatementQuery")) || IsPartitionTicket(nil) {
		t.Error("a Flight SQL ticket is taken for a partition ticket")
	}
}

func TestPartitionTicketRefusesForgeries(t *testing.T) {
	now := time.Now()
	raw, err := EncodePartitionTicket(ticketKey, sampleTicket(now))
	if err != nil {
		t.Fatal(err)
	}
	expired, err := EncodePartitionTicket(ticketKey, PartitionTicket{Dataset: "feats", Expires: now.Add(-time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	noExpiry, err := EncodePartitionTicket(ticketKey, PartitionTicket{Dataset: "feats"})
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := EncodePartitionTicket([]byte("another cluster"), sampleTicket(now))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		out := bytes.Clone(raw)
		out[i] ^= 0x01
		return out
	}
	// A ticket for another partition, signed by nobody: the payload changed, the MAC did not.
	widened := bytes.Replace(raw, []byte(`"partition":3`), []byte(`"partition":4`), 1)
	if bytes.Equal(widened, raw) {
		t.Fatal("test setup: payload not found in ticket")
	}
	prefix := len(partitionTicketPrefix)
	// Signed with an empty key, as anyone could: a node without a key must not accept it.
	payload := raw[prefix : len(raw)-32]
	unkeyed := append(append(bytes.Clone(partitionTicketPrefix), payload...), mac(nil, payload)...)
	cases := []struct {
		name, want string
		raw        []byte
		key        []byte
	}{
		{"payload byte altered", "not issued", flip(prefix + 5), ticketKey},
		{"mac byte altered", "not issued", flip(len(raw) - 1), ticketKey},
		{"partition changed", "not issued", widened, ticketKey},
		{"other key", "not issued", otherKey, ticketKey},
		{"verified with another key", "not issued", raw, []byte("another cluster")},
		{"expired", "expired", expired, ticketKey},
		{"without expiry", "expired", noExpiry, ticketKey},
		{"truncated by one byte", "not issued", raw[:len(raw)-1], ticketKey},
		{"truncated to the mac", "malformed", raw[:prefix+32], ticketKey},
		{"only the prefix", "malformed", raw[:prefix], ticketKey},
		{"empty", "malformed", nil, ticketKey},
		{"not a partition ticket", "malformed", append([]byte("cachedb.statement/1:"), raw[prefix:]...), ticketKey},
		{"no key on the node", "no cluster secret", unkeyed, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodePartitionTicket(c.key, c.raw, now)
			if errs.CategoryOf(err) != errs.InvalidInput || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("DecodePartitionTicket = %+v, %v; want invalid input %q", got, err, c.want)
			}
			if strings.Contains(err.Error(), string(ticketKey)) {
				t.Errorf("error shows the key: %v", err)
			}
		})
	}
	if _, err := EncodePartitionTicket(nil, sampleTicket(now)); err == nil {
		t.Error("a ticket was signed without a key")
	}
}

// TestPartitionTicketRandomBytes feeds random and randomly damaged tickets to the decoder: it
// must refuse each one with invalid input and never panic.
func TestPartitionTicketRandomBytes(t *testing.T) {
	now := time.Now()
	good, err := EncodePartitionTicket(ticketKey, sampleTicket(now))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		var raw []byte
		switch i % 4 {
		case 0: // random bytes
			raw = make([]byte, rng.IntN(200))
			for j := range raw {
				raw[j] = byte(rng.UintN(256))
			}
		case 1: // the prefix and random bytes
			raw = append(bytes.Clone(partitionTicketPrefix), make([]byte, rng.IntN(200))...)
			for j := len(partitionTicketPrefix); j < len(raw); j++ {
				raw[j] = byte(rng.UintN(256))
			}
		case 2: // a good ticket with a few bytes changed
			raw = bytes.Clone(good)
			for range 1 + rng.IntN(3) {
				j := rng.IntN(len(raw))
				raw[j] ^= byte(1 + rng.UintN(255))
			}
		case 3: // a good ticket cut short or extended
			raw = bytes.Clone(good[:rng.IntN(len(good))])
			if rng.IntN(2) == 0 {
				raw = append(bytes.Clone(good), byte(rng.UintN(256)))
			}
		}
		if bytes.Equal(raw, good) {
			continue
		}
		if _, err := DecodePartitionTicket(ticketKey, raw, now); errs.CategoryOf(err) != errs.InvalidInput {
			t.Fatalf("case %d: %q decoded with %v; want invalid input", i, raw, err)
		}
	}
}
