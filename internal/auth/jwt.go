package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/cachedb/cachedb/internal/errs"
)

// JWTConfig says which JSON Web Tokens identify users: those signed by a key of a JWKS (what an
// OIDC provider publishes at its jwks_uri, or a Kubernetes API server at
// /openid/v1/jwks), from the expected issuer, for the expected audience.
type JWTConfig struct {
	// KeysFile is a JWKS document (JSON: {"keys": [...]}) of the public keys tokens are signed
	// with.
	KeysFile string
	// Issuer, when set, must equal the token's "iss".
	Issuer string
	// Audience, when set, must be among the token's "aud".
	Audience string
	// UserClaim names the claim that is the user's name (default "sub").
	UserClaim string
	// RoleClaim names the claim holding the user's role: a role name or a list of names, of
	// which the highest counts (default "cachedb_role").
	RoleClaim string
	// GroupsClaim names the claim holding the user's groups, which grants may name: a group
	// name or a list of them (default "groups"; a token without it belongs to no group).
	GroupsClaim string
	// DefaultRole is the role of a token without RoleClaim (0: such a token is refused).
	DefaultRole Role
}

// Default claim names.
const (
	DefaultUserClaim   = "sub"
	DefaultRoleClaim   = "cachedb_role"
	DefaultGroupsClaim = "groups"
)

// jwtLeeway is how far the token issuer's clock may be from this process's.
const jwtLeeway = 30 * time.Second

// jwtAlgorithms are the signature algorithms accepted: asymmetric ones only, so a token can
// never be signed with a public key as an HMAC secret.
var jwtAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// JWTs verifies JSON Web Tokens into principals.
type JWTs struct {
	cfg  JWTConfig
	keys jose.JSONWebKeySet
}

// LoadJWTs reads cfg.KeysFile and returns the verifier of cfg.
func LoadJWTs(cfg JWTConfig) (*JWTs, error) {
	data, err := os.ReadFile(cfg.KeysFile)
	if err != nil {
		return nil, fmt.Errorf("JWT keys: %w", err)
	}
	return NewJWTs(cfg, data)
}

// NewJWTs returns the verifier of cfg with the JWKS document jwks.
func NewJWTs(cfg JWTConfig, jwks []byte) (*JWTs, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(jwks, &set); err != nil {
		return nil, fmt.Errorf("JWT keys %s: not a JWKS document: %w", cfg.KeysFile, err)
	}
	if len(set.Keys) == 0 {
		return nil, fmt.Errorf("JWT keys %s: the JWKS holds no key", cfg.KeysFile)
	}
	for _, k := range set.Keys {
		if !k.IsPublic() {
			return nil, fmt.Errorf("JWT keys %s: key %q is not a public key (a JWKS for verifying holds public keys only)", cfg.KeysFile, k.KeyID)
		}
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = DefaultUserClaim
	}
	if cfg.RoleClaim == "" {
		cfg.RoleClaim = DefaultRoleClaim
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = DefaultGroupsClaim
	}
	return &JWTs{cfg: cfg, keys: set}, nil
}

// LooksLikeJWT reports whether a bearer token has the shape of a compact JWS (three
// dot-separated parts); cachedb's own tokens have no dot.
func LooksLikeJWT(token string) bool { return strings.Count(token, ".") == 2 }

// Verify returns the principal a JWT names. Every failure is an errs.Unauthenticated error that
// says why without quoting the token.
func (j *JWTs) Verify(token string, now time.Time) (Principal, error) {
	refuse := func(format string, args ...any) (Principal, error) {
		return Principal{}, errs.Unauthenticatedf("the bearer JWT is refused: "+format, args...)
	}
	if len(token) > maxJWTLen {
		return refuse("%d bytes is too long", len(token))
	}
	tok, err := jwt.ParseSigned(token, jwtAlgorithms)
	if err != nil {
		return refuse("it is not a signed JWT with an accepted algorithm (RS*, PS*, ES*, EdDSA)")
	}
	kid := tok.Headers[0].KeyID
	var keys []jose.JSONWebKey
	if kid != "" {
		keys = j.keys.Key(kid)
	} else {
		keys = j.keys.Keys
	}
	if len(keys) == 0 {
		return refuse("no configured key has id %q", kid)
	}
	var (
		std   jwt.Claims
		extra map[string]any
	)
	verified := false
	for _, k := range keys {
		if err := tok.Claims(k.Key, &std, &extra); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return refuse("its signature does not verify with the configured keys")
	}
	if std.Expiry == nil {
		return refuse("it has no expiry (exp)")
	}
	expected := jwt.Expected{Issuer: j.cfg.Issuer, Time: now}
	if j.cfg.Audience != "" {
		expected.AnyAudience = jwt.Audience{j.cfg.Audience}
	}
	if err := std.ValidateWithLeeway(expected, jwtLeeway); err != nil {
		switch {
		case errors.Is(err, jwt.ErrExpired):
			return refuse("it expired at %s", std.Expiry.Time().UTC().Format(time.RFC3339))
		case errors.Is(err, jwt.ErrInvalidIssuer):
			return refuse("it was issued by another issuer")
		case errors.Is(err, jwt.ErrInvalidAudience):
			return refuse("it is for another audience")
		}
		return refuse("%v", err)
	}
	user, _ := extra[j.cfg.UserClaim].(string)
	if user == "" {
		return refuse("claim %q (the user) is missing or not a string", j.cfg.UserClaim)
	}
	role, err := j.roleOf(extra[j.cfg.RoleClaim])
	if err != nil {
		return refuse("%v", err)
	}
	groups, err := stringsOf(extra[j.cfg.GroupsClaim])
	if err != nil {
		return refuse("claim %q (the groups) %v", j.cfg.GroupsClaim, err)
	}
	p := Principal{User: user, Role: role, Groups: groups}
	if std.IssuedAt != nil {
		p.Issued = std.IssuedAt.Time()
	}
	return p, nil
}

// stringsOf reads a claim that is a string or a list of strings (nil when absent).
func stringsOf(v any) ([]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, errors.New("is a list holding something other than strings")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, errors.New("is neither a string nor a list of strings")
}

// maxJWTLen bounds what Verify parses.
const maxJWTLen = 16 << 10

// roleOf reads the role claim: a role name, or a list whose highest known role counts.
func (j *JWTs) roleOf(v any) (Role, error) {
	var names []string
	switch v := v.(type) {
	case nil:
		if j.cfg.DefaultRole == 0 {
			return 0, fmt.Errorf("claim %q (the cachedb role) is missing", j.cfg.RoleClaim)
		}
		return j.cfg.DefaultRole, nil
	case string:
		names = []string{v}
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				names = append(names, s)
			}
		}
	default:
		return 0, fmt.Errorf("claim %q is neither a role name nor a list of them", j.cfg.RoleClaim)
	}
	var best Role
	for _, n := range names {
		if r, err := ParseRole(n); err == nil && r > best {
			best = r
		}
	}
	if best == 0 {
		if j.cfg.DefaultRole != 0 {
			return j.cfg.DefaultRole, nil
		}
		return 0, fmt.Errorf("claim %q names no cachedb role (none, reader, writer, admin)", j.cfg.RoleClaim)
	}
	return best, nil
}
