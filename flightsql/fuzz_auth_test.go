package flightsql

import (
	"context"
	"encoding/base64"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/auth"
	"github.com/cachedb/cachedb/internal/errs"
)

// fakeHandshake is the server side of a handshake: the metadata of the call, no messages, and
// the headers the server sends kept.
type fakeHandshake struct {
	*fakeStream
	sent metadata.MD
}

func (f *fakeHandshake) SendHeader(md metadata.MD) error {
	f.sent = metadata.Join(f.sent, md)
	return nil
}
func (f *fakeHandshake) Send(*flight.HandshakeResponse) error    { return f.count() }
func (f *fakeHandshake) Recv() (*flight.HandshakeRequest, error) { return nil, io.EOF }
func (f *fakeHandshake) context(values ...string) *fakeHandshake {
	md := metadata.MD{}
	for _, v := range values {
		md.Append(auth.Header, v)
	}
	f.ctx = metadata.NewIncomingContext(context.Background(), md)
	return f
}

// FuzzHandshake logs in with arbitrary authorization values, and presents arbitrary bearer
// tokens: the server never panics, refuses all but a right password with UNAUTHENTICATED (or
// RESOURCE_EXHAUSTED past the failed-login limit), and never quotes what it was sent.
func FuzzHandshake(f *testing.F) {
	eng, err := engine.New(engine.Config{})
	if err != nil {
		f.Fatal(err)
	}
	keys := ticket.NewKeyring([]byte("fuzz cluster"), nil)
	now := time.Unix(1_800_000_000, 0)
	s := NewServer(eng, Options{Users: testUsers(f), TicketKey: keys, Logger: quietLogger, LoginBurst: 1 << 30})
	s.now = func() time.Time { return now }
	svc := s.service.(*authService)
	good, _, err := auth.NewTokens(keys, time.Hour).Issue(auth.Principal{User: "admin", Role: auth.Admin}, now)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		auth.BasicValue("admin", "a-pass"),
		auth.BasicValue("admin", "wrong"),
		"Basic " + base64.RawStdEncoding.EncodeToString([]byte("reader:r-pass")),
		"Basic " + base64.StdEncoding.EncodeToString([]byte("no-colon")),
		"Basic !!!",
		"Basic",
		"Bearer " + good,
		"Bearer " + good[:len(good)-2],
		"Bearer " + strings.Repeat("A", 5000),
		"Digest x=y",
		"hunter2-bare-password",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		hs := (&fakeHandshake{fakeStream: &fakeStream{limit: 4}}).context(value)
		err := svc.Handshake(hs)
		tokens := hs.sent.Get(auth.Header)
		switch {
		case err == nil:
			scheme, cred := auth.SplitAuthorization(value)
			user, password, perr := auth.ParseBasic(cred)
			if !strings.EqualFold(scheme, auth.SchemeBasic) || perr != nil || testPasswords[user] != password {
				t.Fatalf("logged in with %q", value)
			}
			if len(tokens) != 1 || !strings.HasPrefix(tokens[0], "Bearer ") {
				t.Fatalf("a login answered %v", tokens)
			}
		case errs.CategoryOf(err) != errs.Unauthenticated:
			t.Fatalf("handshake with %q: %v, want Unauthenticated", value, err)
		case len(tokens) > 0:
			t.Fatalf("a refused login sent %v", tokens)
		}
		scheme, cred := auth.SplitAuthorization(value)
		quotes := func(err error) bool {
			for _, part := range []string{scheme, cred} {
				if len(part) < 6 || strings.EqualFold(part, auth.SchemeBearer) || !strings.Contains(err.Error(), part) {
					continue
				}
				// A part that the refusal of the value without it contains too is the refusal's
				// own words ("asswor" of "password"), not a quote of the credentials.
				masked := strings.Replace(value, part, strings.Repeat("\x01", len(part)), 1)
				if other := svc.Handshake((&fakeHandshake{fakeStream: &fakeStream{limit: 4}}).context(masked)); other != nil && strings.Contains(other.Error(), part) {
					continue
				}
				return true
			}
			return false
		}
		if err != nil && quotes(err) {
			t.Fatalf("the refusal quotes the credentials: %v", err)
		}
		// The same value on a call.
		ctx, err := s.authenticate(metadata.NewIncomingContext(context.Background(), metadata.Pairs(auth.Header, value)), "/arrow.flight.protocol.FlightService/GetFlightInfo")
		if err == nil {
			if p, ok := principalFrom(ctx); !ok || p.User == "" {
				t.Fatalf("a call with %q runs without a principal", value)
			}
			return
		}
		if errs.CategoryOf(err) != errs.Unauthenticated {
			t.Fatalf("a call with %q: %v, want Unauthenticated", value, err)
		}
		if quotes(err) {
			t.Fatalf("the refusal quotes the credentials: %v", err)
		}
	})
}
