package flightsql

import (
	"context"
	"errors"
	"net"

	"google.golang.org/grpc"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/safe"
)

// Serve accepts Flight SQL connections on lis until Shutdown. It returns nil after a shutdown
// and the listener's error otherwise. The listener is closed when Serve returns.
func (s *Server) Serve(lis net.Listener) error {
	err := s.grpc.Serve(lis)
	if err == nil || errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return errs.Internalf("serving Flight SQL on %s: %v", lis.Addr(), err)
}

// Shutdown stops accepting connections and waits for in-flight calls to finish; when ctx ends
// first, the remaining calls are cut off (their contexts are canceled, so queries stop). It
// then closes every open prepared statement. Safe to call more than once.
func (s *Server) Shutdown(ctx context.Context) {
	s.health.Shutdown()
	done := make(chan struct{})
	safe.Spawn("Flight SQL shutdown", func() error {
		defer close(done)
		s.grpc.GracefulStop()
		return nil
	}, nil)
	select {
	case <-done:
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
	}
	s.prepared.closeAll()
}
