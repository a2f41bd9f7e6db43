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
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	"github.com/cachedb/cachedb/flightsql"
	"github.com/cachedb/cachedb/internal/httpserve"
	"github.com/cachedb/cachedb/internal/safe"
	"github.com/cachedb/cachedb/node"
)

// defaultWorkerAddr is where `cachedb worker` listens unless told otherwise.
const defaultWorkerAddr = "127.0.0.1:32011"

func newHeadCommand() *cobra.Command {
	var (
		flags serverFlags
		kf    kubeflowHead
	)
	cmd := &cobra.Command{
		Use:   "head [HOST PORT]",
		Short: "Run the head of a cluster: the Flight SQL server that data nodes register with",
		Long: "Runs the head: the same Flight SQL server as serve, which data nodes started with\n" +
			"`cachedb worker --head ADDR` register with. SELECT * FROM system.nodes lists them.\n" +
			"HOST PORT is --listen HOST:PORT. With Kubeflow Trainer's environment (METADATA_LOC,\n" +
			"LWS_*) it is that data cache's head (docs/kubernetes.md).",
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			env, err := kubeflowSetup(cmd, args, "head")
			if err != nil {
				return err
			}
			if env != nil {
				kf.env = env
				flags.kubeflow = &kf
			}
			return flags.run(cmd, 0)
		},
	}
	flags.register(cmd)
	kf.register(cmd)
	return cmd
}

func newWorkerCommand() *cobra.Command {
	var (
		listen, head, id, advertise string
		secrets                     secretFlags
		sources                     sourceOptions
		statementTimeout, stageIdle time.Duration
		limits                      limitFlags
		memory                      memoryFlags
		secFlags                    securityFlags
		observe                     observeFlags
	)
	cmd := &cobra.Command{
		Use:   "worker [HOST PORT]",
		Short: "Run a data node that registers with a head and serves Flight until SIGINT or SIGTERM",
		Long: "Runs a data node: it registers with the head and serves the parts of queries the head\n" +
			"sends clients to it. It must read the same catalogs as the head (the same --config or\n" +
			"--table and storage flags) and share its --cluster-secret. HOST PORT is --listen\n" +
			"HOST:PORT. With Kubeflow Trainer's environment (METADATA_LOC, LWS_*) it is that data\n" +
			"cache's worker (docs/kubernetes.md).",
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kf, err := kubeflowSetup(cmd, args, "worker")
			if err != nil {
				return err
			}
			ctx, stopSignals := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stopSignals()
			key, err := secrets.keyring(false)
			if err != nil {
				return err
			}
			sec, err := secFlags.resolve(listen)
			if err != nil {
				return err
			}
			ready, stopHTTP, err := observe.start(ctx)
			if err != nil {
				return err
			}
			defer stopHTTP()
			cfg, err := sources.resolve()
			if err != nil {
				return err
			}
			mem, err := memory.start()
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
			engCfg := engine.Config{NoDemo: true, Sources: srcs, DefaultCatalog: cfg.DefaultCatalog, Pool: mem.pool, SpillDir: mem.spillDir, Spill: mem.spill}
			w, err := startWorker(ctx, listen, head, id, advertise, engCfg, stageIdle, key, statementTimeout, limits, mem, sec, ready)
			if err != nil {
				return err
			}
			sec.warn("data node "+w.id, listen)
			if kf != nil {
				kf.awaitDataset(ctx, head, w.id, key, sec, ready)
			}
			ready.Set(starting, true)
			<-ctx.Done()
			slog.Info("data node shutting down", "node", w.id, "grace", shutdownGrace)
			stopCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			w.stop(stopCtx)
			slog.Info("data node stopped", "node", w.id)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", defaultWorkerAddr, "HOST:PORT of the node's Flight server (port 0 picks a free port)")
	f.StringVar(&head, "head", defaultAddr, "HOST:PORT of the head")
	f.StringVar(&id, "id", "", "node ID, unique in the cluster (default HOSTNAME:PORT)")
	f.StringVar(&advertise, "advertise", "", "HOST:PORT the head and other nodes reach this node at (default: the listen address, with the hostname when it listens on all interfaces)")
	secrets.register(cmd, "the head's cluster secret, which its tickets are signed with")
	f.DurationVar(&statementTimeout, "statement-timeout", 0, statementTimeoutUsage)
	f.DurationVar(&stageIdle, "stage-idle", node.DefaultStageIdle, stageIdleUsage)
	sources.register(cmd)
	limits.register(cmd)
	memory.register(cmd)
	secFlags.register(cmd)
	observe.register(cmd)
	return cmd
}

// worker is a running data node: its Flight SQL server, which serves the shares of queries the
// head divides, its node runtime, and the agent that keeps it registered.
type worker struct {
	id     string
	srv    *flightsql.Server
	rt     *node.Runtime
	cancel context.CancelFunc
	agent  chan error
	served chan error
}

// startWorker listens on listen, serves the data node's Flight server and starts its agent
// registering with head. An empty id defaults to HOSTNAME:PORT; an empty advertise to the
// listener's address (the hostname replacing an unspecified host). The node runs until ctx
// ends or stop is called. sec protects its port and its calls to the head and its peers. The
// node is ready (ready, and its gRPC health) while registered. Its runtime holds partitions in
// mem's tiers (cfg.Pool is mem's pool).
func startWorker(ctx context.Context, listen, head, id, advertise string, cfg engine.Config, stageIdle time.Duration, key *ticket.Keyring, statementTimeout time.Duration, limits limitFlags, mem processMemory, sec security, ready *httpserve.Readiness) (*worker, error) {
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("data node listening on %s: %w", listen, err)
	}
	addr := lis.Addr().(*net.TCPAddr)
	if advertise == "" {
		advertise = lis.Addr().String()
		if addr.IP.IsUnspecified() {
			advertise = net.JoinHostPort(hostname(), fmt.Sprint(addr.Port))
		}
	}
	if id == "" {
		id = net.JoinHostPort(hostname(), fmt.Sprint(addr.Port))
	}
	eng, err := engine.New(cfg)
	if err != nil {
		_ = lis.Close()
		return nil, fmt.Errorf("data node %s: starting the engine: %w", id, err)
	}
	rt, err := node.New(node.Config{Engine: eng, Shuffles: cluster.NewShufflesOver(key, sec.cluster), StageIdle: stageIdle, Tiers: mem.tiers})
	if err != nil {
		_ = lis.Close()
		return nil, fmt.Errorf("data node %s: starting its runtime: %w", id, err)
	}
	// The boot ID tells the head this process from an earlier one under the same ID.
	bootID := cluster.NewBootID()
	actions := cluster.NodeConfig{ID: id, Version: version, BootID: bootID, Key: key, Store: rt, Shuffles: rt, Memory: rt.Memory}
	srv := flightsql.NewServer(eng, sec.apply(limits.apply(flightsql.Options{Version: version, TicketKey: key, Node: rt, Extend: cluster.NodeActions(actions), StatementTimeout: statementTimeout, DataNode: true})))
	registered := "data node " + id + " registered with the head"
	ready.Require(registered)
	ready.Watch(srv.SetServing)
	w := &worker{id: id, srv: srv, rt: rt, agent: make(chan error, 1), served: make(chan error, 1)}
	safe.Spawn("data node server", func() error { return w.srv.Serve(lis) }, func(err error) { w.served <- err })
	slog.Info("cachedb worker listening on "+lis.Addr().String(), append([]any{"node", id, "addr", advertise, "head", head, "cluster_key", key.String()}, sec.logAttrs()...)...)
	agentCtx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	agent := cluster.NewAgent(cluster.AgentConfig{ID: id, Addr: advertise, Head: head, Key: key, BootID: bootID, Transport: sec.cluster,
		OnRegistered: func(ok bool) { ready.Set(registered, ok) }})
	safe.Spawn("data node agent", func() error { return agent.Run(agentCtx) }, func(err error) { w.agent <- err })
	return w, nil
}

// stop ends the agent (the head then marks the node lost), shuts the Flight server down, then
// closes the node runtime.
func (w *worker) stop(ctx context.Context) {
	w.cancel()
	if err := <-w.agent; err != nil {
		slog.Error("data node agent failed", "node", w.id, "err", err)
	}
	w.srv.Shutdown(ctx)
	if err := <-w.served; err != nil {
		slog.Error("data node server failed", "node", w.id, "err", err)
	}
	w.rt.Close()
}

// aliveAddrs lists the addresses of the data nodes new work is placed on (alive ones; the
// suspect ones only when none is alive), in ID order.
func aliveAddrs(m *cluster.Membership) []string {
	return cluster.Addrs(cluster.PlacementNodes(m.Nodes()))
}

// logMembership logs the membership changes of data nodes: "data node joined", "data node
// suspect", "data node recovered", "data node lost".
func logMembership(e cluster.Event) {
	attrs := []any{"node", e.Node.ID, "addr", e.Node.Addr, "boot_id", e.Node.BootID}
	if e.Reason != "" {
		attrs = append(attrs, "reason", e.Reason)
	}
	switch e.Kind {
	case cluster.EventJoined, cluster.EventRecovered:
		slog.Info("data node "+string(e.Kind), attrs...)
	default:
		slog.Warn("data node "+string(e.Kind), append(attrs, "last_heartbeat", e.Node.LastHeartbeat)...)
	}
}

// dialable turns a listener's address into one a local client can dial: an unspecified host
// (listening on all interfaces) becomes loopback.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}
