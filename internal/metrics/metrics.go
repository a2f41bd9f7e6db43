// Package metrics holds the process's Prometheus registry and the cachedb metrics in it. Every
// metric is per process: `cachedb serve --workers N` sums its head and its in-process data
// nodes. The instrumented packages call the one-line functions below; internal/httpserve serves
// Registry at /metrics. docs/kubernetes.md lists the metrics.
package metrics

import (
	"runtime"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/cachedb/cachedb/internal/rpcerr"
)

// Registry holds the Go runtime and process collectors and every cachedb metric.
var Registry = prometheus.NewRegistry()

// Statement kinds (the kind label).
const (
	// KindQuery: a query a client runs, counted where it is streamed from (a head answering
	// with data-node endpoints counts it when it answers; the nodes count their shares).
	KindQuery = "query"
	// KindUpdate: a statement run for its effect (DDL, INSERT, USE, CREATE DATASET ...).
	KindUpdate = "update"
	// KindIngest: a bulk ingest (ADBC CommandStatementIngest).
	KindIngest = "ingest"
	// KindStage: a data node's share of a distributed query's result, streamed to the client.
	KindStage = "stage"
	// KindTraining: a training read: one endpoint of a rank's slice of a dataset epoch.
	KindTraining = "training"
)

// OutcomeOK is the outcome label of a statement that succeeded (Outcome).
const OutcomeOK = "ok"

// Outcome is the outcome label of something that ended with err: "ok", or the gRPC code a
// client is told for err (internal/rpcerr), in snake case: invalid_argument, not_found,
// already_exists, resource_exhausted, deadline_exceeded, canceled, unavailable, internal, ...
func Outcome(err error) string {
	if err == nil {
		return OutcomeOK
	}
	var b strings.Builder
	for i, r := range rpcerr.Code(err).String() {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

var (
	statements = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cachedb_statements_total",
		Help: "SQL statements and reads this process ran, by kind and outcome (ok, or the error category).",
	}, []string{"kind", "outcome"})
	statementSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "cachedb_statement_duration_seconds",
		Help: "Time from the call that runs a statement to its end (a query's last batch sent), by kind.",
		// 1 ms to about 17 minutes.
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 11),
	}, []string{"kind"})
	firstBatchSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "cachedb_first_batch_seconds",
		Help: "Time from the call that runs a statement or a read to its first batch sent, by kind (training: a training reader's time to its first batch).",
		// 1 ms to about 17 minutes.
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 11),
	}, []string{"kind"})
	servedRows = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cachedb_served_rows_total",
		Help: "Rows sent to Flight clients in results, by statement kind (training: training reads).",
	}, []string{"kind"})
	servedBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cachedb_served_bytes_total",
		Help: "Arrow buffer bytes sent to Flight clients in results, by statement kind.",
	}, []string{"kind"})
	shuffleBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "cachedb_shuffle_fetched_bytes_total",
		Help: "Arrow buffer bytes of shuffle buckets this process fetched from data nodes.",
	})
	nodeEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cachedb_node_events_total",
		Help: "Membership changes of data nodes the head saw, by event (joined, suspect, recovered, lost).",
	}, []string{"event"})
	datasetLoads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cachedb_dataset_loads_total",
		Help: "Dataset materializations the head ran, by outcome (ok, reused, or the error category).",
	}, []string{"outcome"})
	buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "cachedb_build_info",
		Help: "Always 1; the labels name the build: version, commit and Go version.",
	}, []string{"version", "commit", "goversion"})

	objectStoreBytes = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "cachedb_object_store_read_bytes_total",
		Help: "Bytes this process read from object storage and table files (Parquet data and Iceberg metadata).",
	}, func() float64 { b, _ := objectStoreTotals(); return float64(b) })
	objectStoreRequests = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "cachedb_object_store_requests_total",
		Help: "Requests this process made to object storage (opens, stats and ranged GETs).",
	}, func() float64 { _, r := objectStoreTotals(); return float64(r) })

	columnCacheBytes = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "cachedb_column_cache_bytes",
		Help: "Bytes of decoded Parquet column chunks (and footers) the Iceberg column cache holds.",
	}, func() float64 { return float64(columnCacheTotals().Bytes) })
	columnCacheHits = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "cachedb_column_cache_hits_total",
		Help: "Column chunks Iceberg reads took from the column cache instead of the data file.",
	}, func() float64 { return float64(columnCacheTotals().Hits) })
	columnCacheMisses = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "cachedb_column_cache_misses_total",
		Help: "Column chunks Iceberg reads did not find in the column cache and decoded from the data file.",
	}, func() float64 { return float64(columnCacheTotals().Misses) })
	columnCacheEvictions = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "cachedb_column_cache_evictions_total",
		Help: "Column chunks the column cache dropped to stay within its limit or to give memory back to the pool.",
	}, func() float64 { return float64(columnCacheTotals().Evictions) })

	// nodes and datasets are read from their sources at each scrape (SetNodeSource,
	// SetDatasetSource).
	nodes    = newSourced("cachedb_nodes", "Data nodes registered with the head, by membership state.", "state")
	datasets = newSourced("cachedb_dataset_bytes", "Arrow buffer bytes of dataset partitions held, by data node ID (as the head's registry sees it).", "node")
)

func init() {
	Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		statements, statementSeconds, firstBatchSeconds, servedRows, servedBytes, shuffleBytes,
		nodeEvents, datasetLoads, buildInfo, nodes, datasets, objectStoreBytes, objectStoreRequests,
		columnCacheBytes, columnCacheHits, columnCacheMisses, columnCacheEvictions,
	)
}

// objectStoreSource reads the object-store totals (SetObjectStoreSource).
var objectStoreSource atomic.Pointer[func() (bytes, requests int64)]

func objectStoreTotals() (int64, int64) {
	if f := objectStoreSource.Load(); f != nil {
		return (*f)()
	}
	return 0, 0
}

// SetObjectStoreSource makes the cachedb_object_store_* counters read f at each scrape: the
// bytes and requests the process's reads of object storage have cost so far.
func SetObjectStoreSource(f func() (bytes, requests int64)) { objectStoreSource.Store(&f) }

// ColumnCacheFigures are what the cachedb_column_cache_* metrics report.
type ColumnCacheFigures struct {
	Bytes, Hits, Misses, Evictions int64
}

var columnCacheSource atomic.Pointer[func() ColumnCacheFigures]

func columnCacheTotals() ColumnCacheFigures {
	if f := columnCacheSource.Load(); f != nil {
		return (*f)()
	}
	return ColumnCacheFigures{}
}

// SetColumnCacheSource makes the cachedb_column_cache_* metrics read f at each scrape.
func SetColumnCacheSource(f func() ColumnCacheFigures) { columnCacheSource.Store(&f) }

// SetBuildInfo sets cachedb_build_info's labels; call it once at start.
func SetBuildInfo(version, commit string) {
	buildInfo.Reset()
	buildInfo.WithLabelValues(version, commit, runtime.Version()).Set(1)
}

// StatementDone counts a statement of kind that ended with outcome after running since start.
func StatementDone(kind, outcome string, start time.Time) {
	statements.WithLabelValues(kind, outcome).Inc()
	statementSeconds.WithLabelValues(kind).Observe(time.Since(start).Seconds())
}

// Served counts rows and bytes sent to a client in a result of kind.
func Served(kind string, rows, bytes int64) {
	servedRows.WithLabelValues(kind).Add(float64(rows))
	servedBytes.WithLabelValues(kind).Add(float64(bytes))
}

// FirstBatch observes the time from start to the first batch a statement of kind sent.
func FirstBatch(kind string, start time.Time) {
	firstBatchSeconds.WithLabelValues(kind).Observe(time.Since(start).Seconds())
}

// ShuffleFetched counts bytes of shuffle buckets fetched from a data node.
func ShuffleFetched(bytes int64) { shuffleBytes.Add(float64(bytes)) }

// NodeEvent counts a membership change (cluster.EventKind).
func NodeEvent(event string) { nodeEvents.WithLabelValues(event).Inc() }

// DatasetLoad counts a dataset materialization that ended with outcome.
func DatasetLoad(outcome string) { datasetLoads.WithLabelValues(outcome).Inc() }

// SetNodeSource makes cachedb_nodes read f at each scrape: the number of data nodes per
// membership state. The states in always are reported even when no node is in them, so that a
// dashboard sees 0 rather than nothing. A later call replaces the source.
func SetNodeSource(always []string, f func() map[string]int) {
	nodes.set(always, func() map[string]float64 {
		out := map[string]float64{}
		for k, v := range f() {
			out[k] = float64(v)
		}
		return out
	})
}

// SetDatasetSource makes cachedb_dataset_bytes read f at each scrape: the bytes of dataset
// partitions each data node holds. A later call replaces the source.
func SetDatasetSource(f func() map[string]int64) {
	datasets.set(nil, func() map[string]float64 {
		out := map[string]float64{}
		for k, v := range f() {
			out[k] = float64(v)
		}
		return out
	})
}
