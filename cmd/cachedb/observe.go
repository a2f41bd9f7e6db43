package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/cachedb/cachedb/catalog/iceberg/storage"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/internal/httpserve"
	"github.com/cachedb/cachedb/internal/metrics"
)

// observeFlags are the operator flags of serve, head and worker: the HTTP port with /live,
// /ready and /metrics, and whether it also serves pprof.
type observeFlags struct {
	httpListen string
	pprof      bool
}

func (o *observeFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.httpListen, "http-listen", "", "HOST:PORT of the HTTP port for operators: /live, /ready, /metrics (Prometheus) and, with --pprof, /debug/pprof (default: off; the container image sets :8080)")
	f.BoolVar(&o.pprof, "pprof", false, "serve Go's profiles under /debug/pprof/ on the --http-listen port")
}

// starting is the readiness condition a command meets once it has started everything it runs
// (and each part has required its own conditions).
const starting = "starting"

// start serves the HTTP port (when --http-listen is set) until the returned stop is called.
// The Readiness is the process's: not ready until the command sets starting, with conditions
// added by what the process runs, and not ready for good once ctx ends (shutdown begins). It
// exists even without the port: the gRPC health service on the Flight port follows it too.
func (o observeFlags) start(ctx context.Context) (ready *httpserve.Readiness, stop func(), err error) {
	metrics.SetBuildInfo(version, buildCommit())
	observeStorage()
	ready = httpserve.NewReadiness()
	ready.Require(starting)
	stopReady := context.AfterFunc(ctx, ready.Stop)
	if o.httpListen == "" {
		if o.pprof {
			slog.Warn("--pprof has no effect without --http-listen")
		}
		return ready, func() { stopReady() }, nil
	}
	srv, err := httpserve.Start(httpserve.Options{Addr: o.httpListen, Ready: ready, Gatherer: metrics.Registry, Pprof: o.pprof})
	if err != nil {
		stopReady()
		return nil, nil, err
	}
	slog.Info("serving /live, /ready and /metrics on "+srv.Addr(), "http_addr", srv.Addr(), "pprof", o.pprof)
	return ready, func() {
		stopReady()
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Close(closeCtx); err != nil {
			slog.Warn("closing the HTTP port", "err", err)
		}
	}, nil
}

// observeStorage makes the process's object-store reads the source of the
// cachedb_object_store_* counters.
func observeStorage() { metrics.SetObjectStoreSource(storage.ProcessTotals) }

// observeCluster makes the head's membership and dataset registry the sources of the
// cachedb_nodes and cachedb_dataset_bytes gauges.
func observeCluster(members *cluster.Membership, datasets *cluster.Datasets) {
	metrics.SetNodeSource([]string{string(cluster.StateAlive), string(cluster.StateSuspect), string(cluster.StateLost)}, func() map[string]int {
		out := map[string]int{}
		for _, n := range members.Nodes() {
			out[string(n.State)]++
		}
		return out
	})
	metrics.SetDatasetSource(datasets.BytesByNode)
}
