package flightsql

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/auth"
	"github.com/cachedb/cachedb/internal/errs"
)

// Authentication. With Options.Users a client logs in once, in a Flight handshake carrying
// "authorization: Basic base64(user:password)", and is answered with "authorization: Bearer
// TOKEN" in the response headers (what ADBC, the JDBC driver and pyarrow's
// authenticate_basic_token do); every later call carries that header. Tokens are sealed with the
// cluster secret (internal/auth), so a data node verifies those its head issued.
//
// With Options.JWTs, a bearer token shaped as a JWT is verified against the configured keys
// instead, and its claims name the principal (an identity provider's tokens). With
// Options.ServiceToken, the deployment's shared token is accepted as auth.ServiceUser.
//
// The interceptors (authUnary, authStream) run before any handler: a call with a bearer token
// runs as its principal (principalFrom); one with a token that does not verify, or that
// Options.Revocations revokes, is refused with UNAUTHENTICATED. Without credentials, a server
// with Users refuses every call but four, which prove themselves: the handshake, DoGet of a
// ticket the cluster signed for another process (partition, shuffle), and DoAction of an action
// signed with the cluster secret (membership, datasets, cancel), in authService; and DoPut of a
// store call signed with it (an ingested dataset's rows, cluster.ActionStorePartition), here. A
// server without Users accepts calls without credentials, as
// cachedb did before logins existed.

// Full names of the Flight methods the authentication treats apart.
const (
	methodHandshake = "/arrow.flight.protocol.FlightService/Handshake"
	methodDoGet     = "/arrow.flight.protocol.FlightService/DoGet"
	methodDoAction  = "/arrow.flight.protocol.FlightService/DoAction"
	methodDoPut     = "/arrow.flight.protocol.FlightService/DoPut"
	// healthService prefixes the methods of the gRPC health service (SetServing).
	healthService = "/grpc.health.v1.Health/"
)

type principalKey struct{}

// principalFrom returns the user a call runs as; ok is false for a call without a login.
func principalFrom(ctx context.Context) (auth.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(auth.Principal)
	return p, ok
}

// requireLogin is the error of a call that needs a user and has none.
func requireLogin() error {
	return errs.Unauthenticatedf("log in first: this server requires a user name and password (a Flight handshake with HTTP Basic credentials: ADBC and JDBC username and password, cachedb sql --user) or a bearer token")
}

// authenticate returns ctx carrying the principal of the call's bearer token, ctx itself for a
// call without credentials that may proceed, or an Unauthenticated error.
func (s *Server) authenticate(ctx context.Context, method string) (context.Context, error) {
	if method == methodHandshake || strings.HasPrefix(method, healthService) {
		// The health service says SERVING or NOT_SERVING and nothing else: probes and load
		// balancers ask it without logging in.
		return ctx, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get(auth.Header)
	if len(values) == 0 {
		if !s.loginsRequired() || method == methodDoGet || method == methodDoAction {
			return ctx, nil
		}
		if method == methodDoPut {
			// The head handing a data node an ingested dataset's rows (cluster.ActionStorePartition),
			// signed with the cluster secret; any other DoPut needs a login.
			if isStore, err := cluster.VerifyStoreCall(ctx, s.tickets); isStore {
				return ctx, err
			}
		}
		return nil, requireLogin()
	}
	if len(values) > 1 {
		return nil, errs.Unauthenticatedf("the call carries %d authorization headers; send one", len(values))
	}
	scheme, credentials := auth.SplitAuthorization(values[0])
	if !strings.EqualFold(scheme, auth.SchemeBearer) {
		// The scheme is not quoted: a client that sent a bare password would see it echoed.
		return nil, errs.Unauthenticatedf("a call takes a Bearer token (the handshake's answer), not other authorization")
	}
	p, err := s.verifyBearer(credentials)
	if err != nil {
		return nil, err
	}
	if r := s.opts.Revocations; r != nil {
		if err := r.Check(p, s.now()); err != nil {
			return nil, err
		}
	}
	return s.withPrincipal(ctx, p), nil
}

// verifyBearer returns the principal of a bearer token: the service token, a JWT, or a token
// this cluster issued.
func (s *Server) verifyBearer(credentials string) (auth.Principal, error) {
	if st := s.opts.ServiceToken; st != nil {
		if p, ok := st.Match(credentials); ok {
			return p, nil
		}
	}
	if s.opts.JWTs != nil && auth.LooksLikeJWT(credentials) {
		return s.opts.JWTs.Verify(credentials, s.now())
	}
	return s.tokens.Verify(credentials, s.now())
}

// withPrincipal returns ctx of a call that runs as p: its reads pass p's guard (guardOf).
func (s *Server) withPrincipal(ctx context.Context, p auth.Principal) context.Context {
	ctx = context.WithValue(ctx, principalKey{}, p)
	if g := s.guardOf(ctx); g != nil {
		ctx = engine.WithGuard(ctx, g)
	}
	return ctx
}

// loginsRequired reports whether every client must prove who it is: a users file, JWT keys or
// a service token are configured.
func (s *Server) loginsRequired() bool {
	return s.opts.Users != nil || s.opts.JWTs != nil || s.opts.ServiceToken != nil
}

func (s *Server) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, err := s.authenticate(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (s *Server) authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, err := s.authenticate(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return handler(srv, &sessionServerStream{ServerStream: ss, ctx: ctx})
}
