package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
)

// ServiceUser is the user a service token's bearer acts as.
const ServiceUser = "service"

// MinServiceTokenLen is the shortest service token accepted: 32 characters (`openssl rand -hex
// 32` makes 64), too many to guess.
const MinServiceTokenLen = 32

// ServiceToken is a bearer token a deployment shares with its clients through a mounted Secret
// (--service-token-file): whoever presents it acts as ServiceUser with the configured role.
// It does not expire; rotating it means replacing the Secret and restarting the processes.
// Safe for concurrent use (immutable).
type ServiceToken struct {
	// sum is the token's SHA-256: comparing digests in constant time tells nothing about the
	// token's length or prefix.
	sum  [sha256.Size]byte
	role Role
}

// NewServiceToken checks token (at least MinServiceTokenLen printable ASCII characters without
// spaces, so that it travels as an HTTP header value) and returns the verifier of it for role.
// Its errors never quote the token.
func NewServiceToken(token string, role Role) (*ServiceToken, error) {
	if len(token) < MinServiceTokenLen {
		return nil, fmt.Errorf("the service token has %d characters, fewer than %d: make one with `openssl rand -hex 32`", len(token), MinServiceTokenLen)
	}
	for i := range len(token) {
		if c := token[i]; c <= ' ' || c > '~' {
			return nil, fmt.Errorf("the service token holds a character other than printable ASCII at position %d: make one with `openssl rand -hex 32`", i)
		}
	}
	if role < None || role > Admin {
		return nil, fmt.Errorf("the service token's role must be none, reader, writer or admin")
	}
	return &ServiceToken{sum: sha256.Sum256([]byte(token)), role: role}, nil
}

// Match reports whether token is the service token, and the principal its bearer acts as.
func (s *ServiceToken) Match(token string) (Principal, bool) {
	sum := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(sum[:], s.sum[:]) != 1 {
		return Principal{}, false
	}
	return Principal{User: ServiceUser, Role: s.role}, true
}
