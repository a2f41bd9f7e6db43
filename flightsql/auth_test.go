package flightsql

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/auth"
	"github.com/cachedb/cachedb/internal/testutil/testcerts"
	"github.com/cachedb/cachedb/internal/tlsconf"
)

// testPasswords are the users of the login tests: name → password (and the role in testUsers).
var testPasswords = map[string]string{"reader": "r-pass", "writer": "w-pass", "admin": "a-pass"}

// testUsers is a users file of a reader, a writer and an admin, hashed at bcrypt's lowest cost.
func testUsers(t testing.TB) *auth.Users {
	t.Helper()
	var b strings.Builder
	b.WriteString("users:\n")
	for _, name := range []string{"reader", "writer", "admin"} {
		h, err := auth.HashPassword(testPasswords[name], bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "  - {name: %s, password_hash: %q, roles: [%s]}\n", name, h, name)
	}
	u, err := auth.ParseUsers([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// secureTestServer is a server requiring logins over TLS, with the files its clients trust.
type secureTestServer struct {
	*testServer
	certs testcerts.Files
	log   *syncBuffer
}

// startSecureServer serves engine cfg over TLS (a certificate for loopback) with testUsers and
// opts; its log is kept.
func startSecureServer(t *testing.T, cfg engine.Config, opts Options) *secureTestServer {
	t.Helper()
	certs := testcerts.Loopback(t)
	pair, err := tlsconf.LoadPair(certs.Cert, certs.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if opts.TLS, err = tlsconf.Server(pair, ""); err != nil {
		t.Fatal(err)
	}
	if opts.Users == nil && opts.JWTs == nil {
		opts.Users = testUsers(t)
	}
	log := &syncBuffer{}
	opts.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return &secureTestServer{testServer: startServer(t, cfg, opts), certs: certs, log: log}
}

// clientTLS trusts the server's certificate authority.
func (ts *secureTestServer) clientTLS(t *testing.T) *tls.Config {
	t.Helper()
	cfg, err := tlsconf.Client(ts.certs.CA, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// flightClient is a raw Flight client of ts over TLS, without credentials.
func (ts *secureTestServer) flightClient(t *testing.T) flight.Client {
	t.Helper()
	cl, err := flight.NewClientWithMiddleware(ts.addr, nil, nil, grpc.WithTransportCredentials(credentials.NewTLS(ts.clientTLS(t))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// login logs in over cl and returns a context carrying the bearer token.
func login(t *testing.T, cl flight.Client, user string) context.Context {
	t.Helper()
	ctx, err := cl.AuthenticateBasicToken(testContext(t), user, testPasswords[user])
	if err != nil {
		t.Fatalf("login as %s: %v", user, err)
	}
	return ctx
}

// adbcLogin opens an ADBC connection to ts over TLS, logged in as user with password.
func (ts *secureTestServer) adbcLogin(t *testing.T, user, password string) (adbc.Connection, error) {
	t.Helper()
	drv := adbcflight.NewDriver(memory.DefaultAllocator)
	db, err := drv.NewDatabase(map[string]string{
		adbc.OptionKeyURI:             "grpc+tls://" + ts.addr,
		adbc.OptionKeyUsername:        user,
		adbc.OptionKeyPassword:        password,
		adbcflight.OptionSSLRootCerts: readFile(t, ts.certs.CA),
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { db.Close() })
	cnxn, err := db.Open(testContext(t))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cnxn.Close() })
	return cnxn, nil
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantStatus checks err's gRPC code (and goes on).
func wantStatus(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Errorf("%s: %v, want %s", what, err, code)
	}
}

func TestADBCLoginOverTLS(t *testing.T) {
	ts := startSecureServer(t, engine.Config{}, Options{})
	cnxn, err := ts.adbcLogin(t, "reader", "r-pass")
	if err != nil {
		t.Fatal(err)
	}
	if _, rows := adbcQuery(t, cnxn, "SELECT 40 + 2 AS x"); len(rows) != 1 || rows[0] != "42" {
		t.Errorf("SELECT over TLS after login = %v", rows)
	}
	_, err = ts.adbcLogin(t, "reader", "wrong")
	var ae adbc.Error
	if !errors.As(err, &ae) || ae.Code != adbc.StatusUnauthenticated {
		t.Errorf("a wrong password: %v, want ADBC Unauthenticated", err)
	}
}

// Every RPC of a server that requires logins answers a caller without a token UNAUTHENTICATED,
// even given a ticket a logged-in user was handed.
func TestEveryCallNeedsALogin(t *testing.T) {
	ts := startSecureServer(t, engine.Config{}, Options{})
	cl := ts.flightClient(t)
	ctx := testContext(t)
	stmt, err := fsql.NewClient(ts.addr, nil, nil, grpc.WithTransportCredentials(credentials.NewTLS(ts.clientTLS(t))))
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	info, err := stmt.Execute(login(t, stmt.Client, "reader"), "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	query := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: mustCommand(t, "SELECT 1")}
	for name, call := range everyCall(ctx, cl, info.Endpoint[0].Ticket) {
		wantStatus(t, name, call(), codes.Unauthenticated)
	}
	// A token that does not verify is refused on any call, the handshake aside.
	for name, value := range map[string]string{
		"garbage":           "Bearer not-a-token",
		"Basic on a call":   auth.BasicValue("reader", "r-pass"),
		"another cluster's": "Bearer " + issue(t, ticket.NewKeyring([]byte("elsewhere"), nil), auth.Principal{User: "admin", Role: auth.Admin}, time.Now()),
	} {
		_, err := cl.GetFlightInfo(metadata.AppendToOutgoingContext(ctx, auth.Header, value), query)
		wantStatus(t, name, err, codes.Unauthenticated)
		if err != nil && strings.Contains(err.Error(), strings.TrimPrefix(value, "Bearer ")) {
			t.Errorf("%s: the error quotes the credentials: %v", name, err)
		}
	}
}

func TestTokensExpire(t *testing.T) {
	ts := startSecureServer(t, engine.Config{}, Options{TokenTTL: time.Hour})
	now := time.Now()
	var mu sync.Mutex
	ts.srv.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	cl := ts.flightClient(t)
	ctx := login(t, cl, "reader")
	query := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: mustCommand(t, "SELECT 1")}
	if _, err := cl.GetFlightInfo(ctx, query); err != nil {
		t.Fatalf("with a fresh token: %v", err)
	}
	mu.Lock()
	now = now.Add(time.Hour + time.Second)
	mu.Unlock()
	_, err := cl.GetFlightInfo(ctx, query)
	wantStatus(t, "an expired token", err, codes.Unauthenticated)
	if err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("the refusal does not say the token expired: %v", err)
	}
	// Logging in again gives a token valid from now.
	if _, err := cl.GetFlightInfo(login(t, cl, "reader"), query); err != nil {
		t.Errorf("after logging in again: %v", err)
	}
}

// Failed logins from one address are limited: past the burst, even the right password is
// refused until an attempt comes back; logins succeed again then.
func TestFailedLoginsAreLimited(t *testing.T) {
	ts := startSecureServer(t, engine.Config{}, Options{LoginBurst: 2, LoginEvery: time.Minute})
	now := time.Now()
	var mu sync.Mutex
	ts.srv.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	cl := ts.flightClient(t)
	for i := range 2 {
		_, err := cl.AuthenticateBasicToken(testContext(t), "admin", fmt.Sprintf("guess %d", i))
		wantStatus(t, "a wrong password", err, codes.Unauthenticated)
	}
	_, err := cl.AuthenticateBasicToken(testContext(t), "admin", "a-pass")
	wantStatus(t, "the right password past the limit", err, codes.ResourceExhausted)
	if err == nil || !strings.Contains(err.Error(), "too many failed logins from 127.0.0.1") {
		t.Errorf("the refusal does not say why: %v", err)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	login(t, cl, "admin")
}

// Neither passwords nor tokens reach the log or an error message.
func TestNoSecretInLogsOrErrors(t *testing.T) {
	ts := startSecureServer(t, engine.Config{}, Options{})
	cl := ts.flightClient(t)
	_, err := cl.AuthenticateBasicToken(testContext(t), "writer", "hunter2-not-the-password")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("failed login: %v", err)
	}
	ctx := login(t, cl, "writer")
	md, _ := metadata.FromOutgoingContext(ctx)
	_, token := auth.SplitAuthorization(md.Get(auth.Header)[0])
	if _, err := cl.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: mustCommand(t, "SELECT * FROM nowhere")}); err == nil {
		t.Error("a query of a missing table succeeded")
	}
	log := ts.log.String()
	if !strings.Contains(log, "login failed") || !strings.Contains(log, "user=writer") {
		t.Errorf("the failed login is not logged:\n%s", log)
	}
	for _, secret := range []string{"hunter2", "w-pass", token} {
		if strings.Contains(log, secret) {
			t.Errorf("the log holds a secret (%.10s…):\n%s", secret, log)
		}
	}
}

// everyCall makes each Flight RPC once over cl, with the credentials ctx carries: issued is a
// statement ticket a logged-in user was handed.
func everyCall(ctx context.Context, cl flight.Client, issued *flight.Ticket) map[string]func() error {
	query := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: anyCmd(&pb.CommandStatementQuery{Query: "SELECT 1"})}
	return map[string]func() error{
		"Handshake without credentials": func() error {
			s, err := cl.Handshake(ctx)
			if err != nil {
				return err
			}
			_ = s.CloseSend()
			_, err = s.Recv()
			return err
		},
		"ListFlights": func() error { return recvErr(cl.ListFlights(ctx, &flight.Criteria{})) },
		"GetFlightInfo": func() error {
			_, err := cl.GetFlightInfo(ctx, query)
			return err
		},
		"PollFlightInfo": func() error {
			_, err := cl.PollFlightInfo(ctx, query)
			return err
		},
		"GetSchema": func() error {
			_, err := cl.GetSchema(ctx, query)
			return err
		},
		"DoGet of a logged-in user's ticket": func() error { return recvErr(cl.DoGet(ctx, issued)) },
		"DoGet of a metadata command":        func() error { return recvErr(cl.DoGet(ctx, &flight.Ticket{Ticket: query.Cmd})) },
		"DoPut": func() error {
			s, err := cl.DoPut(ctx)
			if err != nil {
				return err
			}
			_ = s.Send(&flight.FlightData{FlightDescriptor: query})
			_, err = s.Recv()
			return err
		},
		"DoExchange": func() error {
			s, err := cl.DoExchange(ctx)
			if err != nil {
				return err
			}
			_ = s.Send(&flight.FlightData{FlightDescriptor: query})
			_, err = s.Recv()
			return err
		},
		"DoAction CreatePreparedStatement": func() error {
			return recvErr(cl.DoAction(ctx, &flight.Action{Type: fsql.CreatePreparedStatementActionType}))
		},
		"DoAction load": func() error { return recvErr(cl.DoAction(ctx, &flight.Action{Type: ActionLoad, Body: []byte(`{}`)})) },
		"DoAction claiming the cluster": func() error {
			return recvErr(cl.DoAction(metadata.AppendToOutgoingContext(ctx, "cachedb-cluster-auth", "forged"), &flight.Action{Type: "cachedb.register", Body: []byte(`{}`)}))
		},
		"ListActions": func() error { return recvErr(cl.ListActions(ctx, &flight.Empty{})) },
	}
}

// issue makes a token with keys, as a process of another cluster would.
func issue(t *testing.T, keys *ticket.Keyring, p auth.Principal, now time.Time) string {
	t.Helper()
	tok, _, err := auth.NewTokens(keys, time.Hour).Issue(p, now)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// mustCommand is the Flight SQL command of a statement query.
func mustCommand(t *testing.T, query string) []byte {
	t.Helper()
	return anyCmd(&pb.CommandStatementQuery{Query: query})
}

// recvErr is the first error of a server stream: the call's, or the first Recv's.
func recvErr[T any](s interface{ Recv() (T, error) }, err error) error {
	if err != nil {
		return err
	}
	for {
		if _, err := s.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
