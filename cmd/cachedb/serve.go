package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/flightsql"
)

// defaultAddr is where the server listens and the client connects unless told otherwise.
const defaultAddr = "127.0.0.1:32010"

// shutdownGrace is how long in-flight requests may finish after SIGINT/SIGTERM before they are
// cut off.
const shutdownGrace = 10 * time.Second

func newServeCommand() *cobra.Command {
	var (
		listen  string
		catalog string
		noDemo  bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the engine over Flight SQL until SIGINT or SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, listen, engine.Config{CatalogName: catalog, NoDemo: noDemo})
		},
	}
	cmd.Flags().StringVar(&listen, "listen", defaultAddr, "HOST:PORT to listen on (port 0 picks a free port)")
	cmd.Flags().StringVar(&catalog, "catalog", "cachedb", "catalog name clients see")
	cmd.Flags().BoolVar(&noDemo, "no-demo", false, "start without the demo table")
	return cmd
}

// serve runs the server until ctx ends, then stops it gracefully. It logs the address once
// the listener accepts connections, so a supervisor (or a test) can wait for that line.
func serve(ctx context.Context, listen string, cfg engine.Config) error {
	eng, err := engine.New(cfg)
	if err != nil {
		return fmt.Errorf("starting the engine: %w", err)
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	srv := flightsql.NewServer(eng, flightsql.Options{Version: version})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	addr := lis.Addr().String()
	slog.Info("cachedb listening on "+addr, "addr", addr, "version", version)

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	slog.Info("cachedb shutting down", "grace", shutdownGrace)
	stopCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	srv.Shutdown(stopCtx)
	if err := <-served; err != nil {
		return err
	}
	slog.Info("cachedb stopped")
	return nil
}
