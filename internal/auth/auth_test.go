package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/internal/errs"
)

// hash is a bcrypt hash at the lowest cost, so the tests spend little time in bcrypt.
func hash(t *testing.T, password string) string {
	t.Helper()
	h, err := HashPassword(password, bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func usersFileOf(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUsersFile(t *testing.T) {
	alice, bob := hash(t, "alice's secret"), hash(t, "bob:has:colons")
	path := usersFileOf(t, fmt.Sprintf(`
users:
  - name: alice
    password_hash: %q
    roles: [reader]
  - name: bob
    password_hash: %q
    roles: [Reader, ADMIN]
    groups: [team-a, ops]
`, alice, bob))
	u, err := LoadUsers(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(u.Names(), ","); got != "alice,bob" {
		t.Errorf("Names = %s", got)
	}
	for _, tt := range []struct {
		user, password string
		want           Principal
		wantErr        bool
	}{
		{"alice", "alice's secret", Principal{User: "alice", Role: Reader}, false},
		{"bob", "bob:has:colons", Principal{User: "bob", Role: Admin, Groups: []string{"team-a", "ops"}}, false}, // the highest role listed
		{"alice", "bob:has:colons", Principal{}, true},
		{"alice", "", Principal{}, true},
		{"carol", "alice's secret", Principal{}, true},
		{"", "", Principal{}, true},
	} {
		got, err := u.Check(tt.user, tt.password)
		if tt.wantErr {
			if !errors.Is(err, ErrBadLogin) {
				t.Errorf("Check(%q) = %v, %v; want ErrBadLogin", tt.user, got, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Check(%q) = %v, %v; want %v", tt.user, got, err, tt.want)
		}
	}
	// JSON is YAML too.
	if _, err := ParseUsers([]byte(fmt.Sprintf(`{"users": [{"name": "j", "password_hash": %q, "roles": ["writer"]}]}`, alice))); err != nil {
		t.Errorf("JSON users file: %v", err)
	}
}

func TestUsersFileErrors(t *testing.T) {
	h := hash(t, "pw")
	for body, want := range map[string]string{
		``:          "no users",
		`users: []`: "no users",
		`user: []`:  "field user not found",
		`users: [{name: a, password_hash: "` + h + `", roles: [reader], role: x}]`:                                               "field role not found",
		`users: [{password_hash: "` + h + `", roles: [reader]}]`:                                                                 "users[0]: name is required",
		`users: [{name: a, password_hash: "plain text", roles: [reader]}]`:                                                       `user "a": password_hash is not a bcrypt hash`,
		`users: [{name: a, password_hash: "` + h + `"}]`:                                                                         `user "a": roles is empty`,
		`users: [{name: a, password_hash: "` + h + `", roles: [root]}]`:                                                          `user "a": unknown role "root"`,
		`users: [{name: a, password_hash: "` + h + `", roles: [reader]}, {name: a, password_hash: "` + h + `", roles: [admin]}]`: `user "a" is listed twice`,
	} {
		_, err := ParseUsers([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseUsers(%s) = %v, want an error containing %q", body, err, want)
		}
		if err != nil && strings.Contains(err.Error(), h) {
			t.Errorf("the error quotes a password hash: %v", err)
		}
	}
	if _, err := LoadUsers(filepath.Join(t.TempDir(), "none.yaml")); err == nil || !strings.Contains(err.Error(), "none.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestHashPassword(t *testing.T) {
	h := hash(t, "correct horse")
	if bcrypt.CompareHashAndPassword([]byte(h), []byte("correct horse")) != nil {
		t.Error("the hash does not verify its password")
	}
	if _, err := HashPassword("", 0); err == nil {
		t.Error("an empty password was hashed")
	}
	if _, err := HashPassword(strings.Repeat("x", 73), 0); err == nil {
		t.Error("a password longer than bcrypt holds was hashed")
	}
}

func TestRoles(t *testing.T) {
	for _, tt := range []struct {
		have, need Role
		ok         bool
	}{
		{Reader, Reader, true}, {Reader, Writer, false}, {Reader, Admin, false},
		{Writer, Reader, true}, {Writer, Writer, true}, {Writer, Admin, false},
		{Admin, Reader, true}, {Admin, Writer, true}, {Admin, Admin, true},
		{0, Reader, false},
	} {
		if got := (Principal{User: "u", Role: tt.have}).Allows(tt.need); got != tt.ok {
			t.Errorf("%v allows %v = %v", tt.have, tt.need, got)
		}
	}
}

func TestTokens(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	keys := ticket.NewKeyring([]byte("cluster secret"), nil)
	tokens := NewTokens(keys, time.Hour)
	tok, expires, err := tokens.Issue(Principal{User: "alice", Role: Writer, Groups: []string{"team-a"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !expires.Equal(now.Add(time.Hour)) {
		t.Errorf("expires %v", expires)
	}
	if got, err := tokens.Verify(tok, now.Add(59*time.Minute)); err != nil || !reflect.DeepEqual(got, Principal{User: "alice", Role: Writer, Groups: []string{"team-a"}, Issued: now}) {
		t.Errorf("Verify = %v, %v", got, err)
	}
	// Any process holding the secret verifies it; a rotated-in previous key too.
	rotated := NewTokens(ticket.NewKeyring([]byte("new secret"), []byte("cluster secret")), time.Hour)
	if _, err := rotated.Verify(tok, now); err != nil {
		t.Errorf("after rotation: %v", err)
	}
	other := NewTokens(ticket.NewKeyring([]byte("another cluster"), nil), time.Hour)
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	altered := append([]byte(nil), raw...)
	altered[20] ^= 1
	action, _ := keys.Seal(now.Add(time.Hour), otherKind{})
	for name, tt := range map[string]struct {
		tokens *Tokens
		token  string
		at     time.Time
		want   string
	}{
		"expired":         {tokens, tok, now.Add(61 * time.Minute), "token ticket expired at"},
		"another cluster": {other, tok, now, "signed with key"},
		"altered":         {tokens, base64.RawURLEncoding.EncodeToString(altered), now, "signature does not match"},
		"not base64":      {tokens, "!!!", now, "not a cachedb token"},
		"empty":           {tokens, "", now, "not a cachedb token"},
		"another kind":    {tokens, base64.RawURLEncoding.EncodeToString(action), now, "not a cachedb token"},
		"huge":            {tokens, strings.Repeat("A", 10000), now, "malformed"},
	} {
		_, err := tt.tokens.Verify(tt.token, tt.at)
		if errs.CategoryOf(err) != errs.Unauthenticated || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Verify = %v; want Unauthenticated containing %q", name, err, tt.want)
		}
		if err != nil && len(tt.token) > 8 && strings.Contains(err.Error(), tt.token) {
			t.Errorf("%s: the error quotes the token", name)
		}
	}
}

// otherKind is a payload of another kind than a token, signed with the same secret.
type otherKind struct{}

func (otherKind) TicketKind() ticket.Kind { return ticket.Action }

func TestParseBasic(t *testing.T) {
	for _, tt := range []struct {
		value, user, password string
		ok                    bool
	}{
		{BasicValue("alice", "p:w"), "alice", "p:w", true},
		{"Basic " + base64.RawStdEncoding.EncodeToString([]byte("bob:x")), "bob", "x", true}, // arrow-go's unpadded form
		{"basic " + base64.StdEncoding.EncodeToString([]byte("c:")), "c", "", true},
		{"Basic " + base64.StdEncoding.EncodeToString([]byte("no colon")), "", "", false},
		{"Basic not*base64", "", "", false},
	} {
		scheme, cred := SplitAuthorization(tt.value)
		if !strings.EqualFold(scheme, SchemeBasic) {
			t.Fatalf("scheme of %q = %q", tt.value, scheme)
		}
		user, password, err := ParseBasic(cred)
		if (err == nil) != tt.ok || user != tt.user || password != tt.password {
			t.Errorf("ParseBasic(%q) = %q, %q, %v", tt.value, user, password, err)
		}
		if err != nil && strings.Contains(err.Error(), cred) {
			t.Errorf("the error quotes the credentials: %v", err)
		}
	}
}

func TestLimiter(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := NewLimiter(3, 10*time.Second)
	const a, b = "10.0.0.1:5000", "10.0.0.2:5000"
	for i := range 3 {
		if ok, _ := l.Allow(a, now); !ok {
			t.Fatalf("attempt %d refused", i+1)
		}
		// Another port of the same host is the same client.
		l.Fail(fmt.Sprintf("10.0.0.1:%d", 6000+i), now)
	}
	ok, retry := l.Allow(a, now)
	if ok || retry <= 0 || retry > 11*time.Second {
		t.Fatalf("after 3 failures: allowed %v, retry after %v", ok, retry)
	}
	if ok, _ := l.Allow(b, now); !ok {
		t.Error("another address is limited too")
	}
	// One attempt comes back every 10 s.
	if ok, _ := l.Allow(a, now.Add(9*time.Second)); ok {
		t.Error("allowed before an attempt came back")
	}
	later := now.Add(10 * time.Second)
	if ok, _ := l.Allow(a, later); !ok {
		t.Error("not allowed after an attempt came back")
	}
	l.Fail(a, later)
	if ok, _ := l.Allow(a, later); ok {
		t.Error("allowed with no attempt left")
	}
	if ok, _ := l.Allow(a, later.Add(time.Hour)); !ok {
		t.Error("still limited an hour later")
	}
}

func TestLimiterBoundsItsMemory(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := NewLimiter(1, time.Hour)
	for i := range maxTracked + 10 {
		l.Fail(fmt.Sprintf("10.%d.%d.%d:1", i>>16, (i>>8)&255, i&255), now)
	}
	if n := len(l.tracked); n > maxTracked+1 { // the addresses and the shared allowance
		t.Fatalf("%d addresses tracked, more than %d", n, maxTracked)
	}
	// The addresses beyond share one allowance, now spent.
	if ok, _ := l.Allow("192.168.0.1:1", now); ok {
		t.Error("a new address was allowed while the overflow allowance is spent")
	}
	// Once the first ones are whole again, they are forgotten to make room.
	later := now.Add(2 * time.Hour)
	l.Fail("192.168.0.2:1", later)
	if _, ok := l.tracked["192.168.0.2"]; !ok {
		t.Error("a new address did not get its own allowance after the table was pruned")
	}
}
