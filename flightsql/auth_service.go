package flightsql

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/internal/auth"
	"github.com/cachedb/cachedb/internal/errs"
)

// authService is the outermost Flight service: it answers the login handshake and decides the
// calls the interceptors let through without credentials (auth.go), then passes every call on.
type authService struct {
	flight.FlightServer
	s *Server
}

// Handshake exchanges Basic credentials for a bearer token. Failed logins are counted per
// client address (auth.Limiter): past the limit, logins from that address are refused with
// RESOURCE_EXHAUSTED before the password is checked. Neither the password nor the token is
// logged or put in an error.
func (a *authService) Handshake(stream flight.FlightService_HandshakeServer) error {
	s := a.s
	ctx := stream.Context()
	if s.opts.Users == nil {
		if s.opts.JWTs != nil || s.opts.ServiceToken != nil {
			return errs.Unauthenticatedf("this server takes no user names and passwords: send a bearer token (a JWT from the identity provider, or the service token) as authorization: Bearer … on every call")
		}
		return errs.Unsupportedf("this server takes no logins (it runs without --users): connect without a user name and password")
	}
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get(auth.Header)
	if len(values) != 1 {
		return errs.Unauthenticatedf("the handshake carries no credentials: send authorization: Basic base64(user:password)")
	}
	scheme, credentials := auth.SplitAuthorization(values[0])
	if !strings.EqualFold(scheme, auth.SchemeBasic) {
		// The scheme is not quoted: a client that sent a bare password would see it echoed.
		return errs.Unauthenticatedf("the handshake takes Basic credentials (authorization: Basic base64(user:password))")
	}
	client := clientOf(ctx).addr
	if ok, retry := s.logins.Allow(client, s.now()); !ok {
		return errs.Exhaustedf("too many failed logins from %s: try again in %s", hostOf(client), retry)
	}
	user, password, err := auth.ParseBasic(credentials)
	if err == nil {
		var p auth.Principal
		if p, err = s.opts.Users.Check(user, password); err == nil {
			if r := s.opts.Revocations; r != nil {
				if err := r.CheckLogin(p.User, s.now()); err != nil {
					return err
				}
			}
			return a.answerLogin(stream, p)
		}
	}
	s.logins.Fail(client, s.now())
	s.opts.Logger.Warn("login failed", "user", user, "client", client)
	return errs.Unauthenticatedf("login failed: %v", err)
}

// answerLogin sends the token of a successful login in the response headers.
func (a *authService) answerLogin(stream flight.FlightService_HandshakeServer, p auth.Principal) error {
	token, _, err := a.s.tokens.Issue(p, a.s.now())
	if err != nil {
		return err
	}
	a.s.opts.Logger.Debug("login", "user", p.User, "role", p.Role.String(), "client", clientOf(stream.Context()).addr)
	return stream.SendHeader(metadata.Pairs(auth.Header, auth.BearerValue(token)))
}

// DoGet lets a call without a login redeem only what the cluster signed for another of its
// processes (partition and shuffle tickets, bare envelopes no client is handed); the handler
// verifies the signature. Statement tickets need a login when the server requires one, and the
// login of the user they were issued to (DoGetStatement checks).
func (a *authService) DoGet(tk *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	if _, ok := principalFrom(stream.Context()); !ok && a.s.loginsRequired() {
		if kind, bare := ticket.KindOf(tk.GetTicket()); !bare || (kind != ticket.Partition && kind != ticket.Shuffle) {
			return requireLogin()
		}
	}
	return a.FlightServer.DoGet(tk, stream)
}

// DoAction lets a call without a login run only an action signed with the cluster secret (the
// membership and dataset calls between the head and the data nodes).
func (a *authService) DoAction(action *flight.Action, stream flight.FlightService_DoActionServer) error {
	if _, ok := principalFrom(stream.Context()); !ok && a.s.loginsRequired() {
		if err := cluster.VerifyAction(stream.Context(), a.s.tickets, action); err != nil {
			if cluster.SignedAction(stream.Context()) {
				return err
			}
			return requireLogin()
		}
	}
	return a.FlightServer.DoAction(action, stream)
}

// hostOf is the host of a HOST:PORT client address.
func hostOf(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i > 0 {
		return strings.Trim(addr[:i], "[]")
	}
	return addr
}
