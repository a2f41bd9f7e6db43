package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/cachedb/cachedb/internal/auth/jwttest"
	"github.com/cachedb/cachedb/internal/errs"
)

func TestJWTsNameUsersAndRoles(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	iss := jwttest.New(t, "k1")
	j, err := NewJWTs(JWTConfig{Issuer: "https://idp.example", Audience: "cachedb"}, iss.JWKS)
	if err != nil {
		t.Fatal(err)
	}
	claims := func(extra map[string]any) map[string]any {
		c := map[string]any{"iss": "https://idp.example", "aud": []string{"cachedb", "other"}, "sub": "alice",
			"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "cachedb_role": "writer"}
		for k, v := range extra {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	p, err := j.Verify(iss.Sign(t, claims(nil)), now)
	if err != nil || p.User != "alice" || p.Role != Writer || p.Groups != nil {
		t.Fatalf("a valid token: %+v, %v", p, err)
	}
	p, err = j.Verify(iss.Sign(t, claims(map[string]any{"cachedb_role": []string{"reader", "admin", "nobody"}})), now)
	if err != nil || p.Role != Admin {
		t.Errorf("a list of roles: %+v, %v", p, err)
	}
	other := jwttest.New(t, "k1")
	for name, tc := range map[string]struct {
		token, want string
	}{
		"expired":         {iss.Sign(t, claims(map[string]any{"exp": now.Add(-time.Hour).Unix()})), "expired"},
		"no expiry":       {iss.Sign(t, claims(map[string]any{"exp": nil})), "no expiry"},
		"other issuer":    {iss.Sign(t, claims(map[string]any{"iss": "https://evil.example"})), "another issuer"},
		"other audience":  {iss.Sign(t, claims(map[string]any{"aud": "somebody"})), "another audience"},
		"forged":          {other.Sign(t, claims(nil)), "does not verify"},
		"unknown key":     {jwttest.New(t, "k9").Sign(t, claims(nil)), `no configured key has id "k9"`},
		"no role":         {iss.Sign(t, claims(map[string]any{"cachedb_role": nil})), "is missing"},
		"unknown role":    {iss.Sign(t, claims(map[string]any{"cachedb_role": "root"})), "names no cachedb role"},
		"no user":         {iss.Sign(t, claims(map[string]any{"sub": nil})), `claim "sub"`},
		"groups not text": {iss.Sign(t, claims(map[string]any{"groups": []any{"a", 7}})), `claim "groups"`},
		"not a JWT":       {"a.b.c", "not a signed JWT"},
		"unsigned":        {unsigned(claims(nil)), "not a signed JWT"},
	} {
		_, err := j.Verify(tc.token, now)
		if errs.CategoryOf(err) != errs.Unauthenticated || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want Unauthenticated containing %q", name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), tc.token) {
			t.Errorf("%s: the error quotes the token", name)
		}
	}
	p, err = j.Verify(iss.Sign(t, claims(map[string]any{"groups": []string{"team-a", "ops"}, "cachedb_role": "none"})), now)
	if err != nil || p.Role != None || strings.Join(p.Groups, ",") != "team-a,ops" {
		t.Errorf("a list of groups and role none: %+v, %v", p, err)
	}
	p, err = j.Verify(iss.Sign(t, claims(map[string]any{"groups": "team-b"})), now)
	if err != nil || strings.Join(p.Groups, ",") != "team-b" {
		t.Errorf("one group: %+v, %v", p, err)
	}
	withDefault, err := NewJWTs(JWTConfig{DefaultRole: Reader}, iss.JWKS)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := withDefault.Verify(iss.Sign(t, claims(map[string]any{"cachedb_role": nil})), now); err != nil || p.Role != Reader {
		t.Errorf("the default role: %+v, %v", p, err)
	}
}

// unsigned is a JWT with alg "none".
func unsigned(claims map[string]any) string {
	b, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(b) + "."
}

func TestJWKSMustHoldPublicKeys(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	private, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key, KeyID: "p"}}})
	for name, doc := range map[string][]byte{"private": private, "empty": []byte(`{"keys":[]}`), "not json": []byte("keys")} {
		if _, err := NewJWTs(JWTConfig{}, doc); err == nil {
			t.Errorf("%s JWKS accepted", name)
		}
	}
	if !LooksLikeJWT("a.b.c") || LooksLikeJWT("abc") {
		t.Error("LooksLikeJWT")
	}
}
