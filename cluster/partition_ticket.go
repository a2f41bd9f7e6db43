package cluster

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

// partitionTicketPrefix starts every partition ticket, so a data node tells them apart from
// Flight SQL statement tickets (protobuf Any messages, which never start with it).
var partitionTicketPrefix = []byte("cachedb.partition/1:")

// PartitionTicket asks a data node for one partition of a dataset it holds, as the head reads it
// for a query it runs itself (one that aggregates, joins or sorts over a dataset).
type PartitionTicket struct {
	Dataset    string `json:"dataset"`
	Generation uint64 `json:"generation"`
	Partition  int    `json:"partition"`
	// Columns are indexes into the dataset's schema, in output order.
	Columns []int     `json:"columns"`
	Expires time.Time `json:"expires"`
}

// EncodePartitionTicket signs t with the cluster secret key.
func EncodePartitionTicket(key []byte, t PartitionTicket) ([]byte, error) {
	if len(key) == 0 {
		return nil, errs.Internalf("partition ticket: no cluster secret to sign it with")
	}
	payload, err := json.Marshal(t)
	if err != nil {
		return nil, errs.Internalf("partition ticket: %v", err)
	}
	out := append(append([]byte{}, partitionTicketPrefix...), payload...)
	return append(out, mac(key, payload)...), nil
}

// IsPartitionTicket reports whether raw is meant to be a partition ticket.
func IsPartitionTicket(raw []byte) bool { return bytes.HasPrefix(raw, partitionTicketPrefix) }

// DecodePartitionTicket verifies raw against key and the clock: a ticket signed with another
// key, altered, or expired is an errs.InvalidInput error. An empty key verifies nothing: anyone
// could sign with it.
func DecodePartitionTicket(key, raw []byte, now time.Time) (PartitionTicket, error) {
	var t PartitionTicket
	if len(key) == 0 {
		return t, errs.Invalidf("partition ticket cannot be verified: this node has no cluster secret")
	}
	body := bytes.TrimPrefix(raw, partitionTicketPrefix)
	if len(body) <= sha256.Size || len(body) == len(raw) {
		return t, errs.Invalidf("partition ticket is malformed")
	}
	payload, sum := body[:len(body)-sha256.Size], body[len(body)-sha256.Size:]
	if !hmac.Equal(sum, mac(key, payload)) {
		return t, errs.Invalidf("partition ticket was not issued by this cluster's head (wrong cluster secret or altered ticket)")
	}
	if err := json.Unmarshal(payload, &t); err != nil {
		return t, errs.Invalidf("partition ticket is malformed: %v", err)
	}
	if now.After(t.Expires) {
		return t, errs.Invalidf("partition ticket expired at %s", t.Expires.Format(time.RFC3339))
	}
	return t, nil
}

func mac(key, payload []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(payload)
	return h.Sum(nil)
}
