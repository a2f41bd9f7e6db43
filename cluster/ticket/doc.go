// Package ticket is the one signed envelope of cachedb: every ticket a client or a process
// redeems (statement, empty result, training segment, dataset partition, shuffle bucket) and the
// signature of every internal call between the head and the data nodes (action) is sealed and
// opened here, with the cluster secret held in a Keyring.
//
// # Envelope
//
//	offset  bytes  field
//	0       3      "cdb": a cachedb ticket (a Flight SQL ticket, a protobuf Any, starts with 0x0a)
//	3       1      kind (Kind: what the payload is, and who redeems it)
//	4       1      version of the kind's payload struct
//	5       8      expiry, Unix nanoseconds, big-endian
//	13      4      key id: which cluster secret signed it (Keyring)
//	17      n      payload: the kind's struct, encoded as JSON
//	17+n    32     HMAC-SHA256 under that secret over bytes 0 to 17+n
//
// Open checks, in this order, and fails with an errs.InvalidInput error naming what was wrong:
// the shape (malformed), the key id (signed with a secret this process does not hold), the
// signature (altered), the kind and its version (unknown to this process), the expiry (with the
// time it expired). Decode then refuses a ticket of another kind than the one asked for, so a
// ticket of one kind never opens as another: the kind is signed, and every payload struct
// declares its kind (Payload).
//
// # Payload encoding
//
// Every kind's payload is one versioned Go struct, encoded with encoding/json and decoded
// strictly (unknown fields and trailing bytes are refused). JSON over a compact binary encoding
// because it is self-describing (a field added without a version bump fails loudly on an older
// process instead of shifting every field after it), it needs no code per field (the positional
// encodings it replaces did), it is the encoding of every other cluster message, and a ticket can
// be read by a person. The price is size: numbers are text, and field names travel. Measured
// against the hand-packed forms it replaces: a training segment ticket (16 partitions, 4
// columns) grows from 171 to 454 bytes, a statement ticket (SQL, session, one pinned table) from
// 168 to 229, a distributed one (4 nodes, 64 scan tasks) from 324 to 496; clients hold them
// wrapped in Flight SQL's Any, 74 bytes more. Partition and shuffle tickets shrink (no prefix,
// no expiry in the JSON). A training read's FlightInfo has one ticket per segment, so its size
// roughly doubles; it stays far below gRPC's 4 MiB message limit until about 7,000 segments.
//
// # Keys
//
// A Keyring holds the current cluster secret, which signs, and optionally a previous one, which
// is accepted when verifying, so the secret can rotate without stopping the cluster. A ticket
// names its key by id (a short keyed hash of the secret), so the receiver picks the key instead
// of trying each.
package ticket
