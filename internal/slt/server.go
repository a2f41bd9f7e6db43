package slt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

// ServerConfig says how to start `cachedb serve`.
type ServerConfig struct {
	// Binary is the path of the cachedb executable.
	Binary string
	// ExtraArgs are appended after `serve --listen ADDR`.
	ExtraArgs []string
	// StartTimeout bounds how long the server may take to accept connections (default 30s).
	StartTimeout time.Duration
	// RPCTimeout is handed to the ADBC driver as its per-call timeout (0 = none).
	RPCTimeout time.Duration
}

// Server is a running `cachedb serve` process on a loopback port. It implements Backend.
type Server struct {
	cfg  ServerConfig
	cmd  *exec.Cmd
	addr string
	log  *tailBuffer

	done    chan struct{} // closed when the process has exited
	mu      sync.Mutex
	exitErr error
	stopped bool
}

// StartServer starts `BINARY serve --listen 127.0.0.1:PORT` on a free port and waits until it
// accepts TCP connections. It fails, with the tail of the server's output, if the process exits
// or does not listen within cfg.StartTimeout.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	// The server is hermetic: no embedded warehouse, only what the test files create.
	args := append([]string{"serve", "--listen", addr, "--no-warehouse"}, cfg.ExtraArgs...)
	cmd := exec.Command(cfg.Binary, args...)
	log := newTailBuffer(64 * 1024)
	cmd.Stdout = log
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		return nil, errs.NotFoundf("starting %s: %v", cfg.Binary, err)
	}
	s := &Server{cfg: cfg, cmd: cmd, addr: addr, log: log, done: make(chan struct{})}
	go s.wait()
	if err := s.awaitListening(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// StartServers returns a StartBackend that starts a fresh server for each call.
func StartServers(cfg ServerConfig) StartBackend {
	return func(ctx context.Context) (Backend, error) {
		return StartServer(ctx, cfg)
	}
}

func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", errs.Exhaustedf("finding a free loopback port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", errs.Internalf("releasing port %s: %v", addr, err)
	}
	return addr, nil
}

func (s *Server) wait() {
	err := s.cmd.Wait()
	s.mu.Lock()
	s.exitErr = err
	s.mu.Unlock()
	close(s.done)
}

func (s *Server) awaitListening(ctx context.Context) error {
	deadline := time.NewTimer(s.cfg.StartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-s.done:
			return errs.Internalf("cachedb server exited before listening on %s (%v); its output:\n%s", s.addr, s.exitStatus(), s.log.String())
		case <-deadline.C:
			return errs.Exhaustedf("cachedb server did not listen on %s within %s; its output:\n%s", s.addr, s.cfg.StartTimeout, s.log.String())
		case <-ctx.Done():
			return fmt.Errorf("waiting for cachedb server on %s: %w", s.addr, ctx.Err())
		case <-tick.C:
		}
	}
}

func (s *Server) exitStatus() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exitErr == nil {
		return errors.New("exit status 0")
	}
	return s.exitErr
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.addr }

// URI is the ADBC URI of the server.
func (s *Server) URI() string { return "grpc://" + s.addr }

// Connect implements Backend: a new ADBC connection.
func (s *Server) Connect(ctx context.Context) (Conn, error) {
	return DialADBC(ctx, s.URI(), s.cfg.RPCTimeout)
}

// Failure implements Backend: non-nil once the process has exited without being asked to.
func (s *Server) Failure() error {
	select {
	case <-s.done:
	default:
		return nil
	}
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return nil
	}
	return errs.Internalf("cachedb server exited (%v); last output:\n%s", s.exitStatus(), lastLines(s.log.String(), 20))
}

// Close implements Backend: SIGTERM, then SIGKILL if the process has not exited after 5s.
func (s *Server) Close() error {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return nil
	case <-time.After(5 * time.Second):
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	return errs.Internalf("cachedb server on %s ignored SIGTERM and was killed", s.addr)
}

// Output returns the tail of what the server wrote to stdout and stderr.
func (s *Server) Output() string { return s.log.String() }

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// tailBuffer keeps the last max bytes written to it; safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
