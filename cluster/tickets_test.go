package cluster

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/internal/errs"
)

const ticketSecret = "s3cret of the test cluster"

var ticketKey = ticket.NewKeyring([]byte(ticketSecret), nil)

func sampleTicket(now time.Time) PartitionTicket {
	return PartitionTicket{Dataset: "feats", Generation: 1234567890123, Partition: 3, Columns: []int{4, 0, 2}, Expires: now.Add(time.Minute).UTC()}
}

func sampleShuffle(now time.Time) ShuffleTicket {
	return ShuffleTicket{
		Stage: Stage{Query: "q1", SQL: "SELECT s, count(*) FROM t GROUP BY s", Catalog: "lake", Schema: "ns", Pins: map[string]string{"lake.ns.t": "@42"},
			Nodes: []string{"10.0.0.1:32011", "10.0.0.2:32011"}, Owners: [][]int{{0, 1, 1}, {}, {1}}, Expires: now.Add(time.Hour).UTC()},
		Shuffle: 2, Bucket: 1, Node: 1,
	}
}

// Partition and shuffle tickets keep every field, the expiry included, and each refuses the
// other's tickets.
func TestNodeTicketsRoundTrip(t *testing.T) {
	now := time.Now()
	part := sampleTicket(now)
	rawPart, err := EncodePartitionTicket(ticketKey, part)
	if err != nil {
		t.Fatal(err)
	}
	gotPart, err := DecodePartitionTicket(ticketKey, rawPart, now)
	if err != nil || !gotPart.Expires.Equal(part.Expires) {
		t.Fatalf("partition ticket: decoded %+v, %v; want %+v", gotPart, err, part)
	}
	gotPart.Expires = part.Expires
	if !reflect.DeepEqual(gotPart, part) {
		t.Errorf("partition ticket: decoded %+v, want %+v", gotPart, part)
	}
	shuffle := sampleShuffle(now)
	rawShuffle, err := EncodeShuffleTicket(ticketKey, shuffle)
	if err != nil {
		t.Fatal(err)
	}
	gotShuffle, err := DecodeShuffleTicket(ticketKey, rawShuffle, now)
	if err != nil || !gotShuffle.Stage.Expires.Equal(shuffle.Stage.Expires) {
		t.Fatalf("shuffle ticket: decoded %+v, %v; want %+v", gotShuffle, err, shuffle)
	}
	gotShuffle.Stage.Expires = shuffle.Stage.Expires
	if !reflect.DeepEqual(gotShuffle, shuffle) {
		t.Errorf("shuffle ticket: decoded %+v, want %+v", gotShuffle, shuffle)
	}
	// Still good just before it expires, not after.
	if _, err := DecodePartitionTicket(ticketKey, rawPart, part.Expires.Add(-time.Millisecond)); err != nil {
		t.Errorf("just before expiry: %v", err)
	}
	if _, err := DecodeShuffleTicket(ticketKey, rawShuffle, shuffle.Stage.Expires.Add(time.Millisecond)); err == nil || !strings.Contains(err.Error(), "shuffle ticket expired at") {
		t.Errorf("after expiry: %v", err)
	}
	if _, err := DecodeShuffleTicket(ticketKey, rawPart, now); errs.CategoryOf(err) != errs.InvalidInput || !strings.Contains(err.Error(), "a partition ticket is not a shuffle ticket") {
		t.Errorf("a partition ticket opened as a shuffle ticket: %v", err)
	}
	if _, err := DecodePartitionTicket(ticketKey, rawShuffle, now); errs.CategoryOf(err) != errs.InvalidInput || !strings.Contains(err.Error(), "a shuffle ticket is not a partition ticket") {
		t.Errorf("a shuffle ticket opened as a partition ticket: %v", err)
	}
}

func TestPartitionTicketRefusesForgeries(t *testing.T) {
	now := time.Now()
	raw, err := EncodePartitionTicket(ticketKey, sampleTicket(now))
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := EncodePartitionTicket(ticket.NewKeyring([]byte("another cluster"), nil), sampleTicket(now))
	if err != nil {
		t.Fatal(err)
	}
	// A ticket for another partition, signed by nobody: the payload changed, the MAC did not.
	widened := bytes.Replace(raw, []byte(`"partition":3`), []byte(`"partition":4`), 1)
	if bytes.Equal(widened, raw) {
		t.Fatal("test setup: payload not found in ticket")
	}
	cases := []struct {
		name, want string
		raw        []byte
		key        *ticket.Keyring
	}{
		{"partition changed", "not issued by this cluster's head", widened, ticketKey},
		{"other key", "not issued by this cluster's head", otherKey, ticketKey},
		{"verified with another key", "not issued by this cluster's head", raw, ticket.NewKeyring([]byte("another cluster"), nil)},
		{"without expiry", "expired", mustEncode(t, PartitionTicket{Dataset: "feats"}), ticketKey},
		{"truncated", "not issued by this cluster's head", raw[:len(raw)-1], ticketKey},
		{"empty", "malformed", nil, ticketKey},
		{"no key on the node", "no cluster secret", raw, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodePartitionTicket(c.key, c.raw, now)
			if errs.CategoryOf(err) != errs.InvalidInput || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("DecodePartitionTicket = %+v, %v; want invalid input %q", got, err, c.want)
			}
			if strings.Contains(err.Error(), ticketSecret) {
				t.Errorf("error shows the key: %v", err)
			}
		})
	}
	if _, err := EncodePartitionTicket(nil, sampleTicket(now)); err == nil {
		t.Error("a ticket was signed without a key")
	}
}

func mustEncode(t *testing.T, p PartitionTicket) []byte {
	t.Helper()
	raw, err := EncodePartitionTicket(ticketKey, p)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
