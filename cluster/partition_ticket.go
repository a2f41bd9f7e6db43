package cluster

import (
	"time"

	"github.com/cachedb/cachedb/cluster/ticket"
)

// PartitionTicket asks a data node for one partition of a dataset it holds, as the head reads it
// for a query it runs itself (one that aggregates, joins or sorts over a dataset). It is the
// payload of a ticket.Partition ticket.
type PartitionTicket struct {
	Dataset    string `json:"dataset"`
	Generation uint64 `json:"generation"`
	Partition  int    `json:"partition"`
	// Columns are indexes into the dataset's schema, in output order.
	Columns []int `json:"columns"`
	// Expires is the ticket's expiry, which the envelope carries.
	Expires time.Time `json:"-"`
}

// TicketKind makes PartitionTicket the payload of ticket.Partition tickets.
func (PartitionTicket) TicketKind() ticket.Kind { return ticket.Partition }

// EncodePartitionTicket seals t with the cluster secret's current key.
func EncodePartitionTicket(keys *ticket.Keyring, t PartitionTicket) ([]byte, error) {
	return keys.Seal(t.Expires, t)
}

// DecodePartitionTicket opens a partition ticket (ticket.Keyring.Open): one signed with a key
// keys does not hold, altered, of another kind or expired at now is an errs.InvalidInput error.
func DecodePartitionTicket(keys *ticket.Keyring, raw []byte, now time.Time) (PartitionTicket, error) {
	t, expires, err := ticket.OpenAs[PartitionTicket](keys, raw, now)
	t.Expires = expires
	return t, err
}
