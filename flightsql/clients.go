package flightsql

import (
	"context"
	"fmt"
	"sync/atomic"

	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"
)

// A client, for the per-client limits (prepared statements, concurrent statements), is one
// gRPC connection: the server tags each accepted connection with a number of its own when the
// transport opens it (stats.Handler.TagConn), every call on the connection carries the tag in
// its context, and the end of the connection (HandleConn with ConnEnd) drops the prepared
// statements it made. The tag, not the peer address, is the identity, because a closed
// connection's port may be reused by the next one; the address is only what error messages
// name. The session cookie is not used: it is optional, the client chooses it and many
// connections may share one. A call whose context has no tag (handlers called in-process)
// counts against a client named by its gRPC peer address, or "local".
type clientID struct {
	conn uint64 // 0: not a tagged connection
	addr string
}

func (c clientID) String() string {
	if c.conn == 0 {
		return c.addr
	}
	return fmt.Sprintf("%s (connection %d)", c.addr, c.conn)
}

type clientKey struct{}

// clientOf returns the client a call's context belongs to.
func clientOf(ctx context.Context) clientID {
	if id, ok := ctx.Value(clientKey{}).(clientID); ok {
		return id
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return clientID{addr: p.Addr.String()}
	}
	return clientID{addr: "local"}
}

// connTracker is the server's stats.Handler: it tags connections and tells the server when one
// ends.
type connTracker struct {
	next  atomic.Uint64
	ended func(clientID)
}

func (t *connTracker) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	id := clientID{conn: t.next.Add(1), addr: "unknown"}
	if info != nil && info.RemoteAddr != nil {
		id.addr = info.RemoteAddr.String()
	}
	return context.WithValue(ctx, clientKey{}, id)
}

func (t *connTracker) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnEnd); !ok {
		return
	}
	if id, ok := ctx.Value(clientKey{}).(clientID); ok {
		t.ended(id)
	}
}

func (t *connTracker) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (t *connTracker) HandleRPC(context.Context, stats.RPCStats) {}
