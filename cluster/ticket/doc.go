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
// be read by a person. The price is size: numbers are text, and field names travel. A typical
// training segment ticket grows from about 170 to about 430 bytes, a statement ticket from about
// 170 to about 250 (as clients hold them, wrapped in Flight SQL's Any, add 74 bytes); tickets
// still stay far below gRPC's message limits for any realistic FlightInfo.
//
// # Keys
//
// A Keyring holds the current cluster secret, which signs, and optionally a previous one, which
// is accepted when verifying, so the secret can rotate without stopping the cluster. A ticket
// names its key by id (a short keyed hash of the secret), so the receiver picks the key instead
// of trying each.
package ticket
