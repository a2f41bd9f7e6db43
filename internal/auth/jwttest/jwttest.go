// Package jwttest is an identity provider for tests: it signs JSON Web Tokens with a fresh
// ECDSA key and publishes the public half as a JWKS document.
package jwttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer signs tokens with one key.
type Issuer struct {
	key *ecdsa.PrivateKey
	kid string
	// JWKS is the JWKS document of the issuer's public key.
	JWKS []byte
}

// New returns an issuer whose key has id kid ("" for none).
func New(t testing.TB, kid string) *Issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: kid, Algorithm: string(jose.ES256), Use: "sig"}}})
	if err != nil {
		t.Fatal(err)
	}
	return &Issuer{key: key, kid: kid, JWKS: jwks}
}

// Sign returns a compact JWT of claims.
func (i *Issuer) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if i.kid != "" {
		opts = opts.WithHeader("kid", i.kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: i.key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// WriteJWKS writes the JWKS document to a file of the test's and returns its path.
func (i *Issuer) WriteJWKS(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, i.JWKS, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
