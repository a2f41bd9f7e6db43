package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/internal/auth"
	"github.com/cachedb/cachedb/internal/tlsconf"
)

// clientFlags are the connection flags of the client commands (sql, load).
type clientFlags struct {
	tls           bool
	ca, cert, key string
	user          string
	password      secretValue
	token         secretValue
}

func (c *clientFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&c.tls, "tls", false, "connect over TLS (implied by --tls-ca and --tls-cert)")
	f.StringVar(&c.ca, "tls-ca", "", "PEM bundle of the CAs to trust (default: the system's roots)")
	f.StringVar(&c.cert, "tls-cert", "", "PEM client certificate, for a server that requires one (with --tls-key)")
	f.StringVar(&c.key, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&c.user, "user", "", "log in as this user (the server's --users file)")
	registerSecret(f, &c.password, "password", "the user's password (asked on the terminal when not given)")
	registerSecret(f, &c.token, "token", "a bearer token to send instead of logging in (an identity provider's JWT)")
}

// dialer opens connections as the flags say: which transport, and the login whose bearer token
// every call carries, to the head and to the data nodes its endpoints name alike.
type dialer struct {
	tls            *tls.Config // nil: plaintext
	user, password string
	token          *bearerToken
}

// dialer resolves the flags; it asks for the password on the terminal when a user is given
// without one.
func (c *clientFlags) dialer() (*dialer, error) {
	password, err := c.password.get()
	if err != nil {
		return nil, err
	}
	token, err := c.token.get()
	if err != nil {
		return nil, err
	}
	if token != "" && c.user != "" {
		return nil, fmt.Errorf("--user and a bearer token (CACHEDB_TOKEN, --token-file) are two ways to log in: give one")
	}
	d := &dialer{user: c.user, password: password, token: &bearerToken{token: token}}
	if (c.cert == "") != (c.key == "") {
		return nil, fmt.Errorf("--tls-cert and --tls-key go together: give both or neither")
	}
	if c.tls || c.ca != "" || c.cert != "" {
		var pair *tlsconf.Pair
		if c.cert != "" {
			var err error
			if pair, err = tlsconf.LoadPair(c.cert, c.key, nil); err != nil {
				return nil, err
			}
		}
		cfg, err := tlsconf.Client(c.ca, pair)
		if err != nil {
			return nil, err
		}
		d.tls = cfg
	}
	if d.user != "" && d.password == "" {
		if !term.IsTerminal(int(os.Stdin.Fd())) {
			return nil, fmt.Errorf("--user %s needs a password: set CACHEDB_PASSWORD", d.user)
		}
		fmt.Fprintf(os.Stderr, "password for %s: ", d.user)
		pw, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(os.Stderr)
		if err != nil {
			return nil, fmt.Errorf("reading the password: %w", err)
		}
		d.password = string(pw)
	}
	return d, nil
}

// options are the dial options of a connection, over TLS or not.
func (d *dialer) options(useTLS bool) []grpc.DialOption {
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	if useTLS {
		cfg := d.tls
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		creds = credentials.NewTLS(cfg)
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithPerRPCCredentials(d.token)}
}

// flightSQL connects to the server at addr (HOST:PORT) and logs in when a user is given. The
// client returns the session cookie the server sets (sessionCookies), so that a session's
// settings (USE, SET) last from one statement to the next.
func (d *dialer) flightSQL(ctx context.Context, addr string) (*flightsql.Client, error) {
	cl, err := flightsql.NewClient(addr, nil, nil, append(d.options(d.tls != nil), newSessionCookies().dialOptions()...)...)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	if err := d.login(ctx, cl.Client, addr); err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

// flight connects a plain Flight client to addr and logs in when a user is given.
func (d *dialer) flight(ctx context.Context, addr string) (flight.Client, error) {
	cl, err := flight.NewClientWithMiddleware(addr, nil, nil, d.options(d.tls != nil)...)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	if err := d.login(ctx, cl, addr); err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

// location connects to a Flight location an endpoint names: grpc+tls:// over TLS, grpc:// and
// grpc+tcp:// in plaintext. It carries the token the login got; it does not log in again.
func (d *dialer) location(uri string) (*flightsql.Client, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("endpoint location %q is not a grpc:// URI", uri)
	}
	var useTLS bool
	switch strings.ToLower(u.Scheme) {
	case "grpc", "grpc+tcp":
	case "grpc+tls":
		useTLS = true
	default:
		return nil, fmt.Errorf("endpoint location %q: unknown scheme %q", uri, u.Scheme)
	}
	cl, err := flightsql.NewClient(u.Host, nil, nil, d.options(useTLS)...)
	if err != nil {
		return nil, fmt.Errorf("connecting to data node %s: %w", u.Host, err)
	}
	return cl, nil
}

// login exchanges the user and password for a bearer token in a Flight handshake (HTTP Basic
// in, Bearer out), which every later call of this dialer carries.
func (d *dialer) login(ctx context.Context, cl flight.Client, addr string) error {
	if d.user == "" || d.token.get() != "" {
		return nil
	}
	ctx, err := cl.AuthenticateBasicToken(ctx, d.user, d.password)
	if err != nil {
		return fmt.Errorf("logging in to %s as %s: %w", addr, d.user, err)
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	for _, v := range md.Get(auth.Header) {
		if scheme, token := auth.SplitAuthorization(v); strings.EqualFold(scheme, auth.SchemeBearer) && token != "" {
			d.token.set(token)
			return nil
		}
	}
	return fmt.Errorf("logging in to %s as %s: the server answered without a bearer token", addr, d.user)
}

// bearerToken is the per-call credential of a dialer: the token of its login, once it has one.
type bearerToken struct {
	mu    sync.Mutex
	token string
}

func (b *bearerToken) get() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.token
}

func (b *bearerToken) set(token string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.token = token
}

func (b *bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	if t := b.get(); t != "" {
		return map[string]string{auth.Header: auth.BearerValue(t)}, nil
	}
	return nil, nil
}

// RequireTransportSecurity is false: a server on loopback may require logins without TLS.
func (b *bearerToken) RequireTransportSecurity() bool { return false }
