package flightsql

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"

	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/auth"
)

// TestRevokedTokensAreRefused: a revocations file, changed while the server runs, refuses the
// tokens of a user issued before its time (a login after it works again) and every token and
// login of a user listed without one.
func TestRevokedTokensAreRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "revoked.yaml")
	if err := os.WriteFile(path, []byte("revoked: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	revocations, err := auth.LoadRevocations(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := startSecureServer(t, engine.Config{}, Options{Revocations: revocations})
	now := time.Now().Truncate(time.Second)
	var mu sync.Mutex
	ts.srv.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	advance := func(d time.Duration) {
		mu.Lock()
		now = now.Add(d)
		mu.Unlock()
	}
	cl := ts.flightClient(t)
	query := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: mustCommand(t, "SELECT 1")}
	reader, writer := login(t, cl, "reader"), login(t, cl, "writer")
	if _, err := cl.GetFlightInfo(reader, query); err != nil {
		t.Fatalf("before any revocation: %v", err)
	}
	cut := now.Add(time.Second)
	text := fmt.Sprintf("revoked:\n  - {user: reader, before: %q}\n  - {user: writer}\n", cut.UTC().Format(time.RFC3339))
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	advance(auth.RevocationCheckEvery)
	_, err = cl.GetFlightInfo(reader, query)
	wantStatus(t, "a token issued before the cut", err, codes.Unauthenticated)
	if err == nil || !strings.Contains(err.Error(), "revoked") || !strings.Contains(err.Error(), "log in again") {
		t.Errorf("the refusal does not say the token was revoked: %v", err)
	}
	_, err = cl.GetFlightInfo(writer, query)
	wantStatus(t, "a token of a user whose every token is revoked", err, codes.Unauthenticated)
	_, err = cl.AuthenticateBasicToken(testContext(t), "writer", testPasswords["writer"])
	wantStatus(t, "a login of a user whose every token is revoked", err, codes.Unauthenticated)
	// A login after the cut gives a token that works.
	advance(time.Second)
	if _, err := cl.GetFlightInfo(login(t, cl, "reader"), query); err != nil {
		t.Errorf("a token issued after the cut: %v", err)
	}
	// Other users are untouched.
	if _, err := cl.GetFlightInfo(login(t, cl, "admin"), query); err != nil {
		t.Errorf("admin: %v", err)
	}
}
