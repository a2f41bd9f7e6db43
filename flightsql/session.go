package flightsql

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/engine"
)

// Flight SQL session options (SetSessionOptions / GetSessionOptions / CloseSession) choose the
// catalog and db schema unqualified table names resolve in: the options "catalog" and
// "schema", which is what ADBC's adbc.connection.catalog / adbc.connection.db_schema set. The
// server keeps no session state: the choice travels in a cookie the client returns on every
// call (ADBC: database option adbc.flight.sql.rpc.with_cookie_middleware=true), and each call's
// context carries it to the engine (engine.WithSession).

const (
	sessionCookie    = "cachedb_session"
	optionCatalog    = "catalog"
	optionSchema     = "schema"
	sessionCookieAge = 7 * 24 * 3600
)

// sessionFromMetadata reads the session cookie of an incoming call.
func sessionFromMetadata(ctx context.Context) engine.Session {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return engine.Session{}
	}
	header := http.Header{}
	for _, v := range md.Get("cookie") {
		header.Add("Cookie", v)
	}
	c, err := (&http.Request{Header: header}).Cookie(sessionCookie)
	if err != nil {
		return engine.Session{}
	}
	return decodeSession(c.Value)
}

func encodeSession(s engine.Session) string {
	return url.Values{optionCatalog: {s.Catalog}, optionSchema: {s.Schema}}.Encode()
}

func decodeSession(v string) engine.Session {
	raw, err := url.QueryUnescape(v)
	if err != nil {
		return engine.Session{}
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return engine.Session{}
	}
	return engine.Session{Catalog: q.Get(optionCatalog), Schema: q.Get(optionSchema)}
}

// setSessionCookie sends the session to the client (maxAge < 0 deletes it).
func setSessionCookie(ctx context.Context, s engine.Session, maxAge int) error {
	c := http.Cookie{Name: sessionCookie, Value: url.QueryEscape(encodeSession(s)), MaxAge: maxAge}
	return grpc.SetHeader(ctx, metadata.Pairs("set-cookie", c.String()))
}

func withSessionUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	return handler(engine.WithSession(ctx, sessionFromMetadata(ctx)), req)
}

func withSessionStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := engine.WithSession(ss.Context(), sessionFromMetadata(ss.Context()))
	return handler(srv, &sessionServerStream{ServerStream: ss, ctx: ctx})
}

type sessionServerStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *sessionServerStream) Context() context.Context { return s.ctx }

// SetSessionOptions sets "catalog" and/or "schema". Setting the catalog alone resets the schema
// to that catalog's default. Unknown option names, non-string values and names that do not
// resolve are reported per option and change nothing.
func (s *Server) SetSessionOptions(ctx context.Context, req *flight.SetSessionOptionsRequest) (*flight.SetSessionOptionsResult, error) {
	sess := engine.SessionFrom(ctx)
	errors := map[string]*pb.SetSessionOptionsResult_Error{}
	next := sess
	for name, v := range req.GetSessionOptions() {
		str, ok := v.GetOptionValue().(*pb.SessionOptionValue_StringValue)
		if v.GetOptionValue() == nil {
			str, ok = &pb.SessionOptionValue_StringValue{}, true // an empty value clears the option
		}
		switch {
		case name != optionCatalog && name != optionSchema:
			errors[name] = &pb.SetSessionOptionsResult_Error{Value: pb.SetSessionOptionsResult_INVALID_NAME}
		case !ok:
			errors[name] = &pb.SetSessionOptionsResult_Error{Value: pb.SetSessionOptionsResult_INVALID_VALUE}
		case name == optionCatalog:
			next.Catalog = str.StringValue
			if _, alsoSchema := req.GetSessionOptions()[optionSchema]; !alsoSchema && !strings.EqualFold(next.Catalog, sess.Catalog) {
				next.Schema = ""
			}
		default:
			next.Schema = str.StringValue
		}
	}
	if len(errors) == 0 {
		if err := s.eng.ValidateSession(next); err != nil {
			for name := range req.GetSessionOptions() {
				errors[name] = &pb.SetSessionOptionsResult_Error{Value: pb.SetSessionOptionsResult_INVALID_VALUE}
			}
			s.opts.Logger.Info("session option refused", "catalog", next.Catalog, "schema", next.Schema, "err", err)
		}
	}
	if len(errors) > 0 {
		return &flight.SetSessionOptionsResult{Errors: errors}, nil
	}
	if err := setSessionCookie(ctx, next, sessionCookieAge); err != nil {
		return nil, err
	}
	return &flight.SetSessionOptionsResult{}, nil
}

// GetSessionOptions reports the catalog and schema unqualified names resolve in.
func (s *Server) GetSessionOptions(ctx context.Context, _ *flight.GetSessionOptionsRequest) (*flight.GetSessionOptionsResult, error) {
	sess := engine.SessionFrom(ctx)
	cat, schema := sess.Catalog, sess.Schema
	if cat == "" {
		cat = s.eng.Catalog().Name()
	}
	if schema == "" {
		schema = catalog.PublicSchema
		if c, ok := s.eng.Catalogs().Lookup(cat); ok {
			if nc, ok := c.(catalog.NamespacedCatalog); ok {
				schema = nc.DefaultNamespace()
			}
		}
	}
	options, err := flight.NewSessionOptionValues(map[string]any{optionCatalog: cat, optionSchema: schema})
	if err != nil {
		return nil, err
	}
	return &flight.GetSessionOptionsResult{SessionOptions: options}, nil
}

// CloseSession forgets the client's choices.
func (s *Server) CloseSession(ctx context.Context, _ *flight.CloseSessionRequest) (*flight.CloseSessionResult, error) {
	if err := setSessionCookie(ctx, engine.Session{}, -1); err != nil {
		return nil, err
	}
	return &flight.CloseSessionResult{Status: pb.CloseSessionResult_CLOSED}, nil
}
