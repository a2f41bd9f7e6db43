package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/flightsql"
	"github.com/cachedb/cachedb/internal/httpserve"
	"github.com/cachedb/cachedb/internal/safe"
	"github.com/cachedb/cachedb/node"
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
	secrets    secretFlags
	// statementTimeout bounds each SQL statement (flightsql.Options.StatementTimeout).
	statementTimeout time.Duration
	// stageIdle is node.Config.StageIdle, for the head and in-process data nodes.
	stageIdle time.Duration
	limits    limitFlags
	memory    memoryFlags
	security  securityFlags
	observe   observeFlags
	// kubeflow, when set, makes the head Kubeflow Trainer's data cache (kubeflow.go).
	kubeflow *kubeflowHead
}

func (s *serverFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.listen, "listen", defaultAddr, "HOST:PORT to listen on (port 0 picks a free port)")
	f.StringVar(&s.catalog, "catalog", "cachedb", "catalog name clients see")
	f.BoolVar(&s.noDemo, "no-demo", false, "start without the in-memory demo table")
	f.BoolVar(&s.noPushdown, "no-pushdown", false, "scans read whole tables (all columns, no filter pushdown): a baseline for measurements")
	s.sources.register(cmd)
	s.limits.register(cmd)
	s.memory.register(cmd)
	s.security.register(cmd)
	s.secrets.register(cmd, "key the head signs tickets with and data nodes verify them with; the same on every node (default: random, for in-process data nodes only)")
	f.DurationVar(&s.cluster.HeartbeatInterval, "heartbeat-interval", cluster.DefaultHeartbeatInterval, "how often data nodes are told to heartbeat")
	f.DurationVar(&s.cluster.SuspectAfter, "suspect-after", cluster.DefaultSuspectAfter, "silence after which a data node is suspect: no new work goes to it, nothing it holds moves")
	f.DurationVar(&s.cluster.LostAfter, "lost-after", cluster.DefaultLostAfter, "silence after which a data node is marked lost and its dataset partitions are rebuilt on the others")
	f.DurationVar(&s.statementTimeout, "statement-timeout", 0, statementTimeoutUsage)
	f.DurationVar(&s.stageIdle, "stage-idle", node.DefaultStageIdle, stageIdleUsage)
	s.observe.register(cmd)
}

const stageIdleUsage = "how long a node keeps its part of a distributed query (plan, shuffle buffers) once no reader of it is left"

const statementTimeoutUsage = "longest a SQL statement may plan and run before it fails with DEADLINE_EXCEEDED and stops everywhere (0: no limit; training reads are not limited)"

// run starts the head (and workers in-process data nodes) and serves until SIGINT or SIGTERM.
func (s *serverFlags) run(cmd *cobra.Command, workers int) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if workers < 0 {
		return fmt.Errorf("--workers %d: want 0 or more", workers)
	}
	if !cmd.Flags().Changed("suspect-after") && os.Getenv(envPrefix+"SUSPECT_AFTER") == "" && s.cluster.LostAfter < s.cluster.SuspectAfter {
		// A --lost-after below the default suspect timeout alone keeps its old meaning.
		s.cluster.SuspectAfter = s.cluster.LostAfter
	}
	if s.cluster.SuspectAfter <= s.cluster.HeartbeatInterval {
		return fmt.Errorf("--suspect-after %s must be longer than --heartbeat-interval %s", s.cluster.SuspectAfter, s.cluster.HeartbeatInterval)
	}
	if s.cluster.LostAfter < s.cluster.SuspectAfter {
		return fmt.Errorf("--lost-after %s must be at least --suspect-after %s", s.cluster.LostAfter, s.cluster.SuspectAfter)
	}
	key, err := s.secrets.keyring(true)
	if err != nil {
		return err
	}
	ready, stopHTTP, err := s.observe.start(ctx)
	if err != nil {
		return err
	}
	defer stopHTTP()
	cfg, err := s.sources.resolve()
	if err != nil {
		return err
	}
	listen := s.listen
	if !cmd.Flags().Changed("listen") && os.Getenv(envPrefix+"LISTEN") == "" && cfg.Listen != "" {
		listen = cfg.Listen
	}
	sec, err := s.security.resolve(listen)
	if err != nil {
		return err
	}
	if sec, err = sec.withGrants(cfg); err != nil {
		return err
	}
	mem, err := s.memory.start()
	if err != nil {
		return err
	}
	defer mem.close()
	srcs, err := openSources(ctx, cfg, mem.columns)
	if err != nil {
		return err
	}
	if mem.tuneGC {
		go tuneGCPercent(ctx, time.Second)
	}
	return serve(ctx, listen, engine.Config{
		CatalogName: s.catalog, NoDemo: s.noDemo, NoPushdown: s.noPushdown,
		Sources: srcs, DefaultCatalog: cfg.DefaultCatalog, Pool: mem.pool, SpillDir: mem.spillDir, Spill: mem.spill,
	}, s.stageIdle, s.cluster, key, workers, s.statementTimeout, s.limits, mem, sec, ready, s.kubeflow)
}

// serve runs the head until ctx ends, then stops it gracefully: the Flight SQL server with the
// membership actions mounted on it and the system catalog among its sources, plus workers
// in-process data nodes registered with it over Flight. It logs the address once the listener
// accepts connections, so a supervisor (or a test) can wait for that line. sec protects the
// head's port and its in-process data nodes' alike. It sets ready's starting condition once the
// server, the membership and the data nodes run. The head and its in-process data nodes share
// mem: one memory budget for the process.
func serve(ctx context.Context, listen string, cfg engine.Config, stageIdle time.Duration, ccfg cluster.Config, key *ticket.Keyring, workers int, statementTimeout time.Duration, limits limitFlags, mem processMemory, sec security, ready *httpserve.Readiness, kf *kubeflowHead) error {
	ccfg.OnChange = logMembership
	members := cluster.NewMembership(ccfg)
	// Data nodes run the same source catalogs (they read the same tables), not the head's own
	// memory tables or its system catalog.
	nodeCfg := engine.Config{NoDemo: true, NoPushdown: cfg.NoPushdown, Sources: cfg.Sources, DefaultCatalog: cfg.DefaultCatalog, Pool: cfg.Pool, SpillDir: cfg.SpillDir, Spill: cfg.Spill}
	// The registry attaches datasets to the head engine's own catalog, made first; it follows
	// the membership from here on (only a loss moves data).
	cfg.Memory = memcat.NewCatalog(cmp.Or(cfg.CatalogName, "cachedb"))
	datasets := cluster.NewDatasets(cluster.DatasetsConfig{Membership: members, Catalog: cfg.Memory, Key: key, Transport: sec.cluster})
	defer datasets.Close()
	observeCluster(members, datasets)
	system := cluster.NewSystemCatalog(members, datasets)
	system.SetLocalMemory(mem.tiers.Memory)
	cfg.Sources = append(slices.Clone(cfg.Sources), system)
	cfg.Datasets = datasets
	cfg.DataNodes = func() int { return len(aliveAddrs(members)) }
	eng, err := engine.New(cfg)
	if err != nil {
		return fmt.Errorf("starting the engine: %w", err)
	}
	if err := sec.checkGrants(eng.Catalogs()); err != nil {
		return err
	}
	// The head runs the final stage of the distributed queries whose endpoint it is.
	rt, err := node.New(node.Config{Engine: eng, Shuffles: cluster.NewShufflesOver(key, sec.cluster), StageIdle: stageIdle, Tiers: mem.tiers})
	if err != nil {
		return fmt.Errorf("starting the head's node runtime: %w", err)
	}
	defer rt.Close()
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	srv := flightsql.NewServer(eng, sec.apply(limits.apply(flightsql.Options{
		Version: version, Extend: cluster.NewActions(members, key).Wrap, Node: rt,
		TicketKey: key, DataNodes: func() []string { return aliveAddrs(members) },
		ReachableNodes:   func() []string { return cluster.Addrs(cluster.ReachableNodes(members.Nodes())) },
		StatementTimeout: statementTimeout, PathDataset: kf.pathDataset(),
	})))
	ready.Watch(srv.SetServing)
	served := make(chan error, 1)
	safe.Spawn("Flight SQL server", func() error { return srv.Serve(lis) }, func(err error) { served <- err })
	addr := lis.Addr().String()
	sec.warn("cachedb", addr)
	slog.Info("cachedb listening on "+addr, append([]any{"addr", addr, "version", version, "cluster_key", key.String()}, sec.logAttrs()...)...)

	clusterCtx, stopCluster := context.WithCancel(ctx)
	defer stopCluster()
	safe.Spawn("membership", func() error {
		members.Run(clusterCtx)
		return nil
	}, nil)
	var nodes []*worker
	for range workers {
		w, err := startWorker(clusterCtx, "127.0.0.1:0", dialable(addr), "", "", nodeCfg, stageIdle, key, statementTimeout, limits, mem, sec, ready)
		if err != nil {
			err = fmt.Errorf("starting an in-process data node: %w", err)
			stop(nodes, srv)
			<-served
			return err
		}
		nodes = append(nodes, w)
	}
	if kf != nil {
		kf.start(clusterCtx, eng, members, ready)
	}
	ready.Set(starting, true)

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
