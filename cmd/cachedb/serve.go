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
		listen     string
		catalog    string
		noDemo     bool
		noPushdown bool
		sources    sourceOptions
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the engine over Flight SQL until SIGINT or SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg, err := sources.resolve()
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("listen") && os.Getenv(envPrefix+"LISTEN") == "" && cfg.Listen != "" {
				listen = cfg.Listen
			}
			srcs, err := openSources(ctx, cfg)
			if err != nil {
				return err
			}
			return serve(ctx, listen, engine.Config{
				CatalogName: catalog, NoDemo: noDemo, NoPushdown: noPushdown,
				Sources: srcs, DefaultCatalog: cfg.DefaultCatalog,
			})
		},
	}
	cmd.Flags().StringVar(&listen, "listen", defaultAddr, "HOST:PORT to listen on (port 0 picks a free port)")
	cmd.Flags().StringVar(&catalog, "catalog", "cachedb", "catalog name clients see")
	cmd.Flags().BoolVar(&noDemo, "no-demo", false, "start without the in-memory demo table")
	f := cmd.Flags()
	f.BoolVar(&noPushdown, "no-pushdown", false, "scans read whole tables (all columns, no filter pushdown): a baseline for measurements")
	f.StringVar(&sources.configFile, "config", "", "YAML file describing catalogs and storage (docs/catalogs.md)")
	f.StringSliceVar(&sources.tables, "table", nil, "NAME=METADATA_LOCATION: serve a bare Iceberg metadata.json as table NAME of catalog "+filesCatalog+" (repeatable)")
	f.StringVar(&sources.defaultCatalog, "default-catalog", "", "catalog that unqualified and namespace-qualified names fall back to")
	f.StringVar(&sources.warehouse, "warehouse", "", "directory of the embedded Iceberg warehouse (default "+defaultWarehouseDir()+")")
	f.BoolVar(&sources.noWarehouse, "no-warehouse", false, "do not create or serve the embedded warehouse")
	f.StringVar(&sources.s3.Endpoint, "s3-endpoint", "", "S3 endpoint URL for S3-compatible stores such as MinIO (implies path-style)")
	f.StringVar(&sources.s3.Region, "s3-region", "", "S3 region")
	f.StringVar(&sources.s3.AccessKeyID, "s3-access-key-id", "", "S3 access key id (default: the AWS credential chain)")
	f.StringVar(&sources.s3.SecretAccessKey, "s3-secret-access-key", "", "S3 secret access key (prefer CACHEDB_S3_SECRET_ACCESS_KEY)")
	f.StringVar(&sources.s3.SessionToken, "s3-session-token", "", "S3 session token")
	f.StringVar(&sources.s3PathStyle, "s3-path-style", "", "true or false: force path-style or virtual-hosted addressing")
	f.IntVar(&sources.s3.MaxAttempts, "s3-max-attempts", 0, "attempts per S3 request, retries with backoff included (default 5)")
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
