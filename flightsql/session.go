package flightsql

import (
	"context"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/internal/errs"
)

// Flight SQL session options (SetSessionOptions / GetSessionOptions / CloseSession) choose the
// catalog and db schema unqualified table names resolve in: the options "catalog" and
// "schema", which is what ADBC's adbc.connection.catalog / adbc.connection.db_schema set; and
// the limits of the session's statements: "memory_limit" (bytes, or a size such as "256MiB")
// and "statement_timeout" (milliseconds, or a duration such as "30s"), which SET
// cachedb_memory_limit and SET max_execution_time also change; and SET sql_mode's modes (no
// Flight SQL option; under ANSI_QUOTES the session's statements are rewritten as they arrive,
// engine.SessionText). The server keeps no session
// state: the choices travel in a cookie the client returns on every call (ADBC: database option
// adbc.flight.sql.rpc.with_cookie_middleware=true), and each call's context carries them to the
// engine (engine.WithSession).

const (
	sessionCookie          = "cachedb_session"
	optionCatalog          = "catalog"
	optionSchema           = "schema"
	optionMemoryLimit      = "memory_limit"
	optionStatementTimeout = "statement_timeout"
	cookieSQLMode          = "sql_mode" // SET sql_mode's modes; not a Flight SQL option
	sessionCookieAge       = 7 * 24 * 3600
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
	v := url.Values{optionCatalog: {s.Catalog}, optionSchema: {s.Schema}}
	if s.MemoryLimit > 0 {
		v.Set(optionMemoryLimit, strconv.FormatInt(s.MemoryLimit, 10))
	}
	if s.StatementTimeout > 0 {
		v.Set(optionStatementTimeout, s.StatementTimeout.String())
	}
	if s.SQLMode != nil {
		v.Set(cookieSQLMode, *s.SQLMode) // present, even empty: the session set it
	}
	return v.Encode()
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
	s := engine.Session{Catalog: q.Get(optionCatalog), Schema: q.Get(optionSchema)}
	// The cookie is the client's to send: a limit it garbled is no limit of its own, and the
	// server's limits still hold.
	s.MemoryLimit, _ = engine.ParseMemoryLimit(q.Get(optionMemoryLimit))
	s.StatementTimeout, _ = engine.ParseStatementTimeout(q.Get(optionStatementTimeout))
	if q.Has(cookieSQLMode) {
		// A mode that does not read (a garbled cookie) is the server's default.
		if mode, err := engine.NormalizeSQLMode(q.Get(cookieSQLMode)); err == nil {
			s.SQLMode = &mode
		}
	}
	return s
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

// SetSessionOptions sets "catalog", "schema", "memory_limit" and "statement_timeout". Setting
// the catalog alone resets the schema to that catalog's default. An empty value (or erasing
// the option) clears it. Unknown option names (INVALID_NAME), values of the wrong type, limits
// that do not read and names that do not resolve (INVALID_VALUE) are reported per option, with
// the reason in the server's log, and change nothing.
func (s *Server) SetSessionOptions(ctx context.Context, req *flight.SetSessionOptionsRequest) (*flight.SetSessionOptionsResult, error) {
	sess := engine.SessionFrom(ctx)
	errors := map[string]*pb.SetSessionOptionsResult_Error{}
	invalid := func(name string, why error) {
		errors[name] = &pb.SetSessionOptionsResult_Error{Value: pb.SetSessionOptionsResult_INVALID_VALUE}
		s.opts.Logger.Info("session option refused", "option", name, "err", why)
	}
	next := sess
	for name, v := range req.GetSessionOptions() {
		switch name {
		case optionCatalog, optionSchema:
			str, ok := v.GetOptionValue().(*pb.SessionOptionValue_StringValue)
			if v.GetOptionValue() == nil {
				str, ok = &pb.SessionOptionValue_StringValue{}, true // an empty value clears the option
			}
			switch {
			case !ok:
				invalid(name, errs.Invalidf("%s must be a string", name))
			case name == optionCatalog:
				next.Catalog = str.StringValue
				if _, alsoSchema := req.GetSessionOptions()[optionSchema]; !alsoSchema && !strings.EqualFold(next.Catalog, sess.Catalog) {
					next.Schema = ""
				}
			default:
				next.Schema = str.StringValue
			}
		case optionMemoryLimit, optionStatementTimeout:
			text, err := limitText(name, v)
			if err == nil && name == optionMemoryLimit {
				next.MemoryLimit, err = engine.ParseMemoryLimit(text)
			} else if err == nil {
				next.StatementTimeout, err = engine.ParseStatementTimeout(text)
			}
			if err != nil {
				invalid(name, err)
			}
		default:
			errors[name] = &pb.SetSessionOptionsResult_Error{Value: pb.SetSessionOptionsResult_INVALID_NAME}
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

// limitText is a limit option's value as the engine's parsers read it: a string as given, an
// integer in the option's unit (bytes, milliseconds), a whole double likewise; no value clears.
func limitText(name string, v *pb.SessionOptionValue) (string, error) {
	switch v := v.GetOptionValue().(type) {
	case nil:
		return "", nil
	case *pb.SessionOptionValue_StringValue:
		return v.StringValue, nil
	case *pb.SessionOptionValue_Int64Value:
		return strconv.FormatInt(v.Int64Value, 10), nil
	case *pb.SessionOptionValue_DoubleValue:
		if d := v.DoubleValue; d == math.Trunc(d) && math.Abs(d) < 1<<53 {
			return strconv.FormatInt(int64(d), 10), nil
		}
		return "", errs.Invalidf("%s must be a whole number or a string, not %v", name, v.DoubleValue)
	default:
		return "", errs.Invalidf("%s must be a number or a string", name)
	}
}

// GetSessionOptions reports the catalog and schema unqualified names resolve in, and the
// limits a statement of the session runs under: memory_limit in bytes (the session's, 0 when it
// sets none) and statement_timeout in milliseconds (the one in force: the session's, bounded by
// the server's; 0 when none).
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
	options, err := flight.NewSessionOptionValues(map[string]any{
		optionCatalog:          cat,
		optionSchema:           schema,
		optionMemoryLimit:      sess.MemoryLimit,
		optionStatementTimeout: s.statementTimeout(sess).Milliseconds(),
	})
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
