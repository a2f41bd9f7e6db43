package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestRevocations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "revoked.yaml")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("revoked:\n  - {user: alice, before: \"2026-11-25T12:00:00Z\"}\n  - {user: mallory}\n")
	var reloads []error
	r, err := LoadRevocations(path, func(err error) { reloads = append(reloads, err) })
	if err != nil {
		t.Fatal(err)
	}
	cut := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	now := cut.Add(time.Hour)
	for _, tt := range []struct {
		p       Principal
		refused bool
	}{
		{Principal{User: "alice", Issued: cut.Add(-time.Second)}, true},
		{Principal{User: "alice", Issued: cut}, false},
		{Principal{User: "alice", Issued: cut.Add(time.Minute)}, false},
		{Principal{User: "alice"}, true}, // no issue time: a service token, a JWT without iat
		{Principal{User: "mallory", Issued: now}, true},
		{Principal{User: "bob", Issued: cut.Add(-time.Hour)}, false},
	} {
		err := r.Check(tt.p, now)
		if tt.refused != (err != nil) || (err != nil && errs.CategoryOf(err) != errs.Unauthenticated) {
			t.Errorf("Check(%s issued %v) = %v, want refused %v", tt.p.User, tt.p.Issued, err, tt.refused)
		}
	}
	if r.CheckLogin("mallory", now) == nil || r.CheckLogin("alice", now) != nil {
		t.Error("CheckLogin: mallory may not log in, alice (whose old tokens only are revoked) may")
	}

	// The file changes: read again once it is due, not before.
	write("revoked:\n  - {user: bob}\n")
	if r.Check(Principal{User: "bob", Issued: now}, now) != nil {
		t.Error("the change applied before it was due")
	}
	later := now.Add(RevocationCheckEvery)
	if r.Check(Principal{User: "bob", Issued: now}, later) == nil || r.Check(Principal{User: "mallory", Issued: now}, later) != nil {
		t.Error("the changed file did not replace the list")
	}
	// A change that does not parse keeps the list in force, and is reported once.
	write("revoked:\n  - {user: bob, before: yesterday}\n")
	later = later.Add(RevocationCheckEvery)
	if r.Check(Principal{User: "bob", Issued: now}, later) == nil {
		t.Error("a bad file dropped the list")
	}
	_ = r.Check(Principal{User: "bob"}, later.Add(RevocationCheckEvery))
	if len(reloads) != 2 || reloads[0] != nil || reloads[1] == nil || !strings.Contains(reloads[1].Error(), "RFC 3339") {
		t.Errorf("reloads reported: %v", reloads)
	}
	if r.Len() != 1 {
		t.Errorf("Len = %d", r.Len())
	}
}

func TestBadRevocationsFiles(t *testing.T) {
	for text, want := range map[string]string{
		"revoked:\n  - {before: \"2026-11-25T12:00:00Z\"}\n": "user is required",
		"revoked:\n  - {user: a}\n  - {user: a}\n":           "listed twice",
		"revoked:\n  - {user: a, before: 2026-11-25}\n":      "RFC 3339",
		"revokd: []\n": "revokd",
	} {
		if _, err := ParseRevocations([]byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error containing %q", text, err, want)
		}
	}
	if got, err := ParseRevocations(nil); err != nil || len(got) != 0 {
		t.Errorf("an empty file: %v, %v", got, err)
	}
}
