// Package httpserve is a process's HTTP side port for operators: /live, /ready, /metrics
// (Prometheus text exposition) and, when asked for, /debug/pprof. It carries no data and no
// SQL; Kubernetes probes and Prometheus scrape it.
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configure a Server.
type Options struct {
	// Addr is the HOST:PORT to listen on (port 0 picks a free port).
	Addr string
	// Ready answers /ready (nil: always ready).
	Ready *Readiness
	// Gatherer is served at /metrics (nil: no /metrics).
	Gatherer prometheus.Gatherer
	// Pprof serves net/http/pprof under /debug/pprof/. Profiles show what the process runs;
	// leave it off where the port is reachable by others.
	Pprof bool
	// Logger receives serving errors (default slog.Default()).
	Logger *slog.Logger
}

// Server serves the operator endpoints until Close.
type Server struct {
	http   *http.Server
	lis    net.Listener
	served chan error
}

// Start listens on opts.Addr and serves in the background.
func Start(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	lis, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("HTTP listener on %s: %w", opts.Addr, err)
	}
	s := &Server{
		http: &http.Server{
			Handler:           Handler(opts),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
		},
		lis:    lis,
		served: make(chan error, 1),
	}
	go func() {
		err := s.http.Serve(lis)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.served <- err
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Close stops the server: it waits for requests in flight until ctx ends, then cuts them off.
func (s *Server) Close(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if err != nil {
		_ = s.http.Close()
	}
	if serveErr := <-s.served; serveErr != nil {
		return serveErr
	}
	return err
}

// Handler serves the endpoints of opts (Addr and Logger aside).
func Handler(opts Options) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /live", func(w http.ResponseWriter, _ *http.Request) {
		// Serving this request is the proof of life: the process runs and is not wedged.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		ready, unmet := opts.Ready.Check()
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintln(w, "not ready: "+strings.Join(unmet, ", "))
			return
		}
		_, _ = fmt.Fprintln(w, "ready")
	})
	if opts.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
		}))
	}
	if opts.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}
