package auth

import (
	"encoding/base64"
	"errors"
	"strings"
)

// The HTTP authorization schemes of a Flight handshake and of the calls after it.
const (
	// Header is the gRPC metadata key of credentials, both ways.
	Header       = "authorization"
	SchemeBasic  = "Basic"
	SchemeBearer = "Bearer"
)

// SplitAuthorization splits an authorization value into its scheme and credentials ("Basic
// dXNlcjpwdw==" → "Basic", "dXNlcjpwdw=="). The scheme compares case-insensitively.
func SplitAuthorization(value string) (scheme, credentials string) {
	scheme, credentials, _ = strings.Cut(strings.TrimSpace(value), " ")
	return scheme, strings.TrimLeft(credentials, " ")
}

// errMalformedBasic is every malformed Basic credential; it never quotes what was sent.
var errMalformedBasic = errors.New("the Basic credentials are not base64 of user:password")

// ParseBasic decodes Basic credentials: base64 (padded, as HTTP and the JDBC driver send it, or
// unpadded, as arrow-go's client does) of "user:password".
func ParseBasic(credentials string) (user, password string, err error) {
	raw, err := base64.StdEncoding.DecodeString(credentials)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(credentials); err != nil {
			return "", "", errMalformedBasic
		}
	}
	user, password, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", "", errMalformedBasic
	}
	return user, password, nil
}

// BasicValue is the authorization value of a Basic login.
func BasicValue(user, password string) string {
	return SchemeBasic + " " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// BearerValue is the authorization value that carries token.
func BearerValue(token string) string { return SchemeBearer + " " + token }
