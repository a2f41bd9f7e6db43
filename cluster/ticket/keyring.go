package ticket

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// keyIDLen is the length of a key id in the envelope.
const keyIDLen = 4

// KeyID names a cluster secret without revealing it: the first bytes of HMAC-SHA256 keyed with
// the secret over a fixed label. Two different secrets share an id with probability 2^-32;
// Open then tries both.
type KeyID [keyIDLen]byte

func (id KeyID) String() string { return hex.EncodeToString(id[:]) }

type key struct {
	secret []byte
	id     KeyID
}

func newKey(secret []byte) key {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte("cachedb key id"))
	k := key{secret: bytes.Clone(secret)}
	copy(k.id[:], h.Sum(nil))
	return k
}

// mac is HMAC-SHA256 of msg under k: the only MAC cachedb computes.
func (k key) mac(msg []byte) []byte {
	h := hmac.New(sha256.New, k.secret)
	h.Write(msg)
	return h.Sum(nil)
}

// Keyring holds the cluster secret: the current key, which seals, and optionally the previous
// one, which Open still accepts, so that the secret can rotate while the cluster serves
// (docs/cluster.md has the procedure). A nil *Keyring is "no cluster secret": it seals nothing
// and opens nothing. A Keyring is immutable and safe for concurrent use.
type Keyring struct {
	// keys[0] is the current key; keys[1], when present, the previous one.
	keys []key
}

// NewKeyring returns the keyring of current, also accepting previous when it is not empty. An
// empty current gives nil: no cluster secret.
func NewKeyring(current, previous []byte) *Keyring {
	if len(current) == 0 {
		return nil
	}
	k := &Keyring{keys: []key{newKey(current)}}
	if len(previous) > 0 && !bytes.Equal(previous, current) {
		k.keys = append(k.keys, newKey(previous))
	}
	return k
}

// RandomKeyring returns a keyring of a fresh random key: tickets only this process (and those
// it hands the keyring to) can open. crypto/rand.Read does not fail: it aborts the program when
// the system has no randomness at all.
func RandomKeyring() *Keyring {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	return NewKeyring(secret, nil)
}

// Current is the id of the key that seals.
func (k *Keyring) Current() KeyID { return k.keys[0].id }

// String names the keys by id, for logs and errors: "1a2b3c4d" or "1a2b3c4d (previous 5e6f7a8b)".
func (k *Keyring) String() string {
	if k == nil {
		return "no cluster secret"
	}
	var b strings.Builder
	b.WriteString(k.keys[0].id.String())
	for _, prev := range k.keys[1:] {
		b.WriteString(" (previous " + prev.id.String() + ")")
	}
	return b.String()
}

// verify reports whether sum is the MAC of msg under one of k's keys named id; known is false
// when k holds no key of that id.
func (k *Keyring) verify(id KeyID, msg, sum []byte) (ok, known bool) {
	for _, key := range k.keys {
		if key.id != id {
			continue
		}
		known = true
		if hmac.Equal(sum, key.mac(msg)) {
			return true, true
		}
	}
	return false, known
}
