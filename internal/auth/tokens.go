package auth

import (
	"encoding/base64"
	"time"

	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/internal/errs"
)

// DefaultTokenTTL is how long a bearer token is valid unless told otherwise (--token-ttl).
const DefaultTokenTTL = 12 * time.Hour

// maxTokenLen bounds what Verify decodes: a token is about 150 bytes, more with many groups.
const maxTokenLen = 4096

// tokenClaim is the payload of a ticket.Token envelope.
type tokenClaim struct {
	User   string   `json:"user"`
	Role   string   `json:"role"`
	Groups []string `json:"groups,omitempty"`
	// Issued is when the token was issued, in Unix seconds (revocations compare it).
	Issued int64 `json:"iat,omitempty"`
}

// TicketKind makes tokenClaim the payload of ticket.Token envelopes.
func (tokenClaim) TicketKind() ticket.Kind { return ticket.Token }

// Tokens issues and verifies bearer tokens with the cluster secret.
type Tokens struct {
	keys *ticket.Keyring
	ttl  time.Duration
}

// NewTokens returns the codec of tokens sealed with keys, valid for ttl (DefaultTokenTTL when 0).
func NewTokens(keys *ticket.Keyring, ttl time.Duration) *Tokens {
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	return &Tokens{keys: keys, ttl: ttl}
}

// Issue returns a token for p, valid from now for the TTL, and its expiry.
func (t *Tokens) Issue(p Principal, now time.Time) (string, time.Time, error) {
	expires := now.Add(t.ttl)
	raw, err := t.keys.Seal(expires, tokenClaim{User: p.User, Role: p.Role.String(), Groups: p.Groups, Issued: now.Unix()})
	if err != nil {
		return "", time.Time{}, err
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	if len(token) > maxTokenLen {
		return "", time.Time{}, errs.Invalidf("the token of user %s would be %d bytes, more than %d: list fewer groups", p.User, len(token), maxTokenLen)
	}
	return token, expires, nil
}

// Verify returns the principal a token carries. Every failure is an errs.Unauthenticated error
// that says why (malformed, not signed by this cluster, expired) without quoting the token.
func (t *Tokens) Verify(token string, now time.Time) (Principal, error) {
	if len(token) > maxTokenLen {
		return Principal{}, errs.Unauthenticatedf("the bearer token is malformed: %d bytes", len(token))
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return Principal{}, errs.Unauthenticatedf("the bearer token is malformed: it is not a cachedb token")
	}
	if kind, ok := ticket.KindOf(raw); !ok || kind != ticket.Token {
		return Principal{}, errs.Unauthenticatedf("the bearer token is malformed: it is not a cachedb token")
	}
	claim, _, err := ticket.OpenAs[tokenClaim](t.keys, raw, now)
	if err != nil {
		// The envelope's messages name key ids and expiry times, never the bytes.
		return Principal{}, errs.Unauthenticatedf("the bearer token is not valid: %v", err)
	}
	role, err := ParseRole(claim.Role)
	if err != nil || claim.User == "" {
		return Principal{}, errs.Unauthenticatedf("the bearer token is malformed: no user or role")
	}
	p := Principal{User: claim.User, Role: role, Groups: claim.Groups}
	if claim.Issued != 0 {
		p.Issued = time.Unix(claim.Issued, 0)
	}
	return p, nil
}
