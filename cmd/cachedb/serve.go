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

	"github.com/cachedb/cachedb/cluster"
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
		flags   serverFlags
		workers int
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the engine over Flight SQL until SIGINT or SIGTERM",
		Long: "Serves the engine over Flight SQL. With --workers N it also runs N data nodes in the\n" +
			"same process on loopback ports, registered with it as separate workers would be.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return flags.run(cmd, workers) },
	}
	flags.register(cmd)
	cmd.Flags().IntVar(&workers, "workers", 0, "data nodes to run in this process")
	return cmd
}

// serverFlags are the flags of the commands that run a head (serve, head).
type serverFlags struct {
	listen     string
	catalog    string
	noDemo     bool
	noPushdown bool
	sources    sourceOptions
	cluster    cluster.Config
}

func (s *serverFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.listen, "listen", defaultAddr, "HOST:PORT to listen on (port 0 picks a free port)")
	f.StringVar(&s.catalog, "catalog", "cachedb", "catalog name clients see")
	f.BoolVar(&s.noDemo, "no-demo", false, "start without the in-memory demo table")
	f.BoolVar(&s.noPushdown, "no-pushdown", false, "scans read whole tables (all columns, no filter pushdown): a baseline for measurements")
	f.StringVar(&s.sources.configFile, "config", "", "YAML file describing catalogs and storage (docs/catalogs.md)")
	f.StringSliceVar(&s.sources.tables, "table", nil, "NAME=METADATA_LOCATION: serve a bare Iceberg metadata.json as table NAME of catalog "+filesCatalog+" (repeatable)")
	f.StringVar(&s.sources.defaultCatalog, "default-catalog", "", "catalog that unqualified and namespace-qualified names fall back to")
	f.StringVar(&s.sources.warehouse, "warehouse", "", "directory of the embedded Iceberg warehouse (default "+defaultWarehouseDir()+")")
	f.BoolVar(&s.sources.noWarehouse, "no-warehouse", false, "do not create or serve the embedded warehouse")
	f.StringVar(&s.sources.s3.Endpoint, "s3-endpoint", "", "S3 endpoint URL for S3-compatible stores such as MinIO (implies path-style)")
	f.StringVar(&s.sources.s3.Region, "s3-region", "", "S3 region")
	f.StringVar(&s.sources.s3.AccessKeyID, "s3-access-key-id", "", "S3 access key id (default: the AWS credential chain)")
	f.StringVar(&s.sources.s3.SecretAccessKey, "s3-secret-access-key", "", "S3 secret access key (prefer CACHEDB_S3_SECRET_ACCESS_KEY)")
	f.StringVar(&s.sources.s3.SessionToken, "s3-session-token", "", "S3 session token")
	f.StringVar(&s.sources.s3PathStyle, "s3-path-style", "", "true or false: force path-style or virtual-hosted addressing")
	f.IntVar(&s.sources.s3.MaxAttempts, "s3-max-attempts", 0, "attempts per S3 request, retries with backoff included (default 5)")
	f.DurationVar(&s.cluster.HeartbeatInterval, "heartbeat-interval", cluster.DefaultHeartbeatInterval, "how often data nodes are told to heartbeat")
	f.DurationVar(&s.cluster.LostAfter, "lost-after", cluster.DefaultLostAfter, "silence after which a data node is marked lost")
}

// run starts the head (and workers in-process data nodes) and serves until SIGINT or SIGTERM.
func (s *serverFlags) run(cmd *cobra.Command, workers int) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if workers < 0 {
		return fmt.Errorf("--workers %d: want 0 or more", workers)
	}
	if s.cluster.LostAfter <= s.cluster.HeartbeatInterval {
		return fmt.Errorf("--lost-after %s must be longer than --heartbeat-interval %s", s.cluster.LostAfter, s.cluster.HeartbeatInterval)
	}
	cfg, err := s.sources.resolve()
	if err != nil {
		return err
	}
	listen := s.listen
	if !cmd.Flags().Changed("listen") && os.Getenv(envPrefix+"LISTEN") == "" && cfg.Listen != "" {
		listen = cfg.Listen
	}
	srcs, err := openSources(ctx, cfg)
	if err != nil {
		return err
	}
	return serve(ctx, listen, engine.Config{
		CatalogName: s.catalog, NoDemo: s.noDemo, NoPushdown: s.noPushdown,
		Sources: srcs, DefaultCatalog: cfg.DefaultCatalog,
	}, s.cluster, workers)
}

// serve runs the head until ctx ends, then stops it gracefully: the Flight SQL server with the
// membership actions mounted on it and the system catalog among its sources, plus workers
// in-process data nodes registered with it over Flight. It logs the address once the listener
// accepts connections, so a supervisor (or a test) can wait for that line.
func serve(ctx context.Context, listen string, cfg engine.Config, ccfg cluster.Config, workers int) error {
	ccfg.OnChange = logMembership
	members := cluster.NewMembership(ccfg)
	cfg.Sources = append(cfg.Sources, cluster.NewSystemCatalog(members))
	eng, err := engine.New(cfg)
	if err != nil {
		return fmt.Errorf("starting the engine: %w", err)
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	srv := flightsql.NewServer(eng, flightsql.Options{Version: version, Extend: cluster.NewActions(members).Wrap})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	addr := lis.Addr().String()
	slog.Info("cachedb listening on "+addr, "addr", addr, "version", version)

	clusterCtx, stopCluster := context.WithCancel(ctx)
	defer stopCluster()
	go members.Run(clusterCtx)
	var nodes []*worker
	for range workers {
		w, err := startWorker(clusterCtx, "127.0.0.1:0", dialable(addr), "", "")
		if err != nil {
			err = fmt.Errorf("starting an in-process data node: %w", err)
			stop(nodes, srv)
			<-served
			return err
		}
		nodes = append(nodes, w)
	}

	select {
	case err := <-served:
		stop(nodes, nil)
		return err
	case <-ctx.Done():
	}
	slog.Info("cachedb shutting down", "grace", shutdownGrace)
	stop(nodes, srv)
	if err := <-served; err != nil {
		return err
	}
	slog.Info("cachedb stopped")
	return nil
}

// stop shuts the in-process data nodes down, then the head's server (when not nil), each
// within shutdownGrace.
func stop(nodes []*worker, srv *flightsql.Server) {
	stopCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	for _, w := range nodes {
		w.stop(stopCtx)
	}
	if srv != nil {
		srv.Shutdown(stopCtx)
	}
}
