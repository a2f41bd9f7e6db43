package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// sessionCookies keeps the cookies a server sets on one connection (the server keeps a
// session's USE database and SET limits in one) and sends them back with every later call, so
// that a session's settings last from one statement to the next.
//
// arrow-go's cookie middleware reads a stream's headers only once the stream has been read to
// its end, which the Flight SQL client's updates never do (they read the one result and stop):
// a USE, run as an update, would be lost. These interceptors read the headers as soon as a
// stream's first message has arrived.
type sessionCookies struct {
	mu      sync.Mutex
	cookies map[string]string // name → value
}

func newSessionCookies() *sessionCookies { return &sessionCookies{cookies: map[string]string{}} }

// dialOptions are the interceptors that keep the cookies for a connection.
func (j *sessionCookies) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(j.unary), grpc.WithChainStreamInterceptor(j.stream)}
}

// outgoing adds the kept cookies to ctx's outgoing metadata.
func (j *sessionCookies) outgoing(ctx context.Context) context.Context {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.cookies) == 0 {
		return ctx
	}
	pairs := make([]string, 0, len(j.cookies))
	for name, value := range j.cookies {
		pairs = append(pairs, name+"="+value)
	}
	sort.Strings(pairs)
	return metadata.AppendToOutgoingContext(ctx, "cookie", strings.Join(pairs, "; "))
}

// received keeps the cookies md sets and forgets the ones it expires.
func (j *sessionCookies) received(md metadata.MD) {
	for _, line := range md.Get("set-cookie") {
		c, err := http.ParseSetCookie(line)
		if err != nil {
			continue
		}
		j.mu.Lock()
		if c.MaxAge < 0 || (!c.Expires.IsZero() && c.Expires.Before(time.Now())) {
			delete(j.cookies, c.Name)
		} else {
			j.cookies[c.Name] = c.Value
		}
		j.mu.Unlock()
	}
}

func (j *sessionCookies) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var header, trailer metadata.MD
	err := invoker(j.outgoing(ctx), method, req, reply, cc, append(opts, grpc.Header(&header), grpc.Trailer(&trailer))...)
	j.received(header)
	j.received(trailer)
	return err
}

func (j *sessionCookies) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(j.outgoing(ctx), desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &cookieStream{ClientStream: cs, jar: j}, nil
}

// cookieStream hands its headers to the jar once its first message has arrived (the headers
// come before it), and its trailers at its end.
type cookieStream struct {
	grpc.ClientStream
	jar    *sessionCookies
	headed bool
}

func (s *cookieStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if !s.headed && (err == nil || errors.Is(err, io.EOF)) {
		s.headed = true
		if md, herr := s.ClientStream.Header(); herr == nil {
			s.jar.received(md)
		}
	}
	if errors.Is(err, io.EOF) {
		s.jar.received(s.ClientStream.Trailer())
	}
	return err
}
