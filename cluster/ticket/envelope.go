package ticket

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

const (
	magic = "cdb"
	// Offsets of the header fields (the package doc draws the layout).
	kindAt    = len(magic)
	versionAt = kindAt + 1
	expiresAt = versionAt + 1
	keyIDAt   = expiresAt + 8
	headerLen = keyIDAt + keyIDLen
	macLen    = sha256.Size
	// overhead is what the envelope adds to a payload: header and MAC.
	overhead = headerLen + macLen
)

// Seal encodes p and signs it with k's current key; the ticket opens until expires. Only a bug
// makes it fail (no cluster secret, a payload that does not encode), with an errs.Internal error.
func (k *Keyring) Seal(expires time.Time, p Payload) ([]byte, error) {
	kind := p.TicketKind()
	if k == nil {
		return nil, errs.Internalf("%s ticket: no cluster secret to sign it with", kind)
	}
	if kind.Version() == 0 {
		return nil, errs.Internalf("sealing a ticket of unknown %s", kind)
	}
	// HTML escaping (json.Marshal's default) would spell every < and > of SQL text in 6 bytes.
	var payload bytes.Buffer
	enc := json.NewEncoder(&payload)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, errs.Internalf("%s ticket: %v", kind, err)
	}
	return k.SealRaw(kind, kind.Version(), expires, bytes.TrimSuffix(payload.Bytes(), []byte("\n"))), nil
}

// SealRaw signs payload as it is, under any kind and version: tests build with it the tickets a
// correct head never seals (unknown kinds and versions, malformed payloads). k must not be nil.
func (k *Keyring) SealRaw(kind Kind, version uint8, expires time.Time, payload []byte) []byte {
	key := k.keys[0]
	out := make([]byte, headerLen, headerLen+len(payload)+macLen)
	copy(out, magic)
	out[kindAt], out[versionAt] = byte(kind), version
	binary.BigEndian.PutUint64(out[expiresAt:], uint64(unixNanos(expires)))
	copy(out[keyIDAt:], key.id[:])
	out = append(out, payload...)
	return append(out, key.mac(out)...)
}

// unixNanos is t in Unix nanoseconds, clamped to [0, MaxInt64] (1970 to 2262): a zero time
// is already expired.
func unixNanos(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, 0)):
		return 0
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// KindOf reports the kind raw claims, and whether raw is shaped like a ticket at all. It
// verifies nothing: it only routes raw to the code that opens it.
func KindOf(raw []byte) (Kind, bool) {
	if len(raw) < overhead || string(raw[:len(magic)]) != magic {
		return 0, false
	}
	return Kind(raw[kindAt]), true
}

// Opened is a ticket whose signature, kind, version and expiry were checked; Decode reads its
// payload.
type Opened struct {
	Kind    Kind
	Expires time.Time
	payload []byte
}

// Open verifies raw: that it is a ticket, signed with a key of k (current or previous), of a
// kind and version this process knows, and not expired at now. Every failure is an
// errs.InvalidInput error naming what was wrong; Open never panics on arbitrary bytes.
func (k *Keyring) Open(raw []byte, now time.Time) (Opened, error) {
	if k == nil {
		return Opened{}, errs.Invalidf("ticket cannot be verified: this process has no cluster secret")
	}
	if len(raw) < overhead || string(raw[:len(magic)]) != magic {
		return Opened{}, errs.Invalidf("ticket is malformed: it is not a cachedb ticket (%d bytes)", len(raw))
	}
	body, sum := raw[:len(raw)-macLen], raw[len(raw)-macLen:]
	var id KeyID
	copy(id[:], body[keyIDAt:])
	switch ok, known := k.verify(id, body, sum); {
	case !known:
		return Opened{}, errs.Invalidf("ticket was not issued by this cluster's head: it is signed with key %s and this process holds %s; the head and every data node must share the cluster secret", id, k)
	case !ok:
		return Opened{}, errs.Invalidf("ticket was not issued by this cluster's head: its signature does not match (the ticket was altered)")
	}
	kind, version := Kind(body[kindAt]), body[versionAt]
	if kind.Version() == 0 {
		return Opened{}, errs.Invalidf("ticket is of unknown %s; run the same cachedb version on the head and every data node", kind)
	}
	if version != kind.Version() {
		return Opened{}, errs.Invalidf("%s ticket has version %d and this process reads version %d; run the same cachedb version on the head and every data node", kind, version, kind.Version())
	}
	expires := time.Unix(0, int64(binary.BigEndian.Uint64(body[expiresAt:])))
	if now.After(expires) {
		return Opened{}, errs.Invalidf("%s ticket expired at %s; %s", kind, expires.UTC().Format(time.RFC3339), kinds[kind].expiredHint)
	}
	return Opened{Kind: kind, Expires: expires, payload: body[headerLen:]}, nil
}

// Decode reads o's payload as P, refusing a ticket of another kind than P's and a payload that
// is not exactly one P (unknown fields, trailing bytes), with errs.InvalidInput errors.
func Decode[P Payload](o Opened) (P, error) {
	var p P
	if want := p.TicketKind(); o.Kind != want {
		return p, errs.Invalidf("%s ticket is not %s ticket", o.Kind.article(), want.article())
	}
	dec := json.NewDecoder(bytes.NewReader(o.payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, errs.Invalidf("%s ticket is malformed: %v", o.Kind, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return p, errs.Invalidf("%s ticket is malformed: bytes after its payload", o.Kind)
	}
	return p, nil
}

// OpenAs opens raw (Keyring.Open) and decodes it as P (Decode); it returns the ticket's expiry.
func OpenAs[P Payload](k *Keyring, raw []byte, now time.Time) (P, time.Time, error) {
	o, err := k.Open(raw, now)
	if err != nil {
		var p P
		return p, time.Time{}, err
	}
	p, err := Decode[P](o)
	return p, o.Expires, err
}
