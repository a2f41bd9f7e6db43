// Package engine runs SQL statements: it binds them (sql), optimizes and plans them (planner),
// executes the physical plan (exec) and applies DDL and DML to the catalog. It is what the
// Flight SQL server and the tests call; it knows nothing about the wire.
package engine

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/catalog"
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/mempool"
	"github.com/cachedb/cachedb/sql"
)

// Config is the engine's configuration. The zero value is usable: every field has a default.
type Config struct {
	// CatalogName is the name clients see for the in-memory catalog (default "cachedb").
	CatalogName string
	// Partitions is the number of partitions plans are spread over (default 2).
	Partitions int
	// BatchSize is the target number of rows per batch (default 8192).
	BatchSize int
	// Alloc is the allocator every query uses (default memory.DefaultAllocator).
	Alloc memory.Allocator
	// Pool is the process's memory budget: each statement's operators reserve their state from
	// a group of it (default: a pool without a limit, which only counts).
	Pool *mempool.Pool
	// SpillDir is where operators whose memory reservation is refused (sort, hash aggregate,
	// hash join) write their spill files ("": a cachedb-spill-<pid> directory under the
	// system's temporary directory).
	SpillDir string
	// Spill bounds the spill files of the process (nil: no bound); the engines of one process
	// share one.
	Spill *exec.SpillBudget
	// NoDemo leaves the demo table out of the catalog.
	NoDemo bool
	// Sources are catalogs queried beside the engine's own memory catalog (Iceberg catalogs),
	// by the naming rules of catalog.Set. Their names must differ from CatalogName and from
	// each other.
	Sources []catalog.Catalog
	// NoPushdown makes scans read whole tables (all columns, no source-side filter): the
	// baseline for measuring pushdown.
	NoPushdown bool
	// DefaultCatalog names the source catalog that unqualified and namespace-qualified table
	// names fall back to ("" for none).
	DefaultCatalog string
	// Limits bound the statements the engine plans: their length in bytes, their nesting and
	// the number of expressions and query blocks bound (sql.Limits; a zero field takes its
	// default: 16 MiB, 5,000 levels, 2,000,000). A statement beyond them fails with
	// errs.ResourceExhausted before it is planned.
	Limits sql.Limits
	// Memory is the engine's own catalog, which receives DDL (default: a new one named
	// CatalogName; when set, its name is the catalog name). A head gives the one its dataset
	// registry attaches datasets to.
	Memory *memcat.Catalog
	// Datasets is the head's dataset registry (nil: the engine runs no cluster). With it, CREATE
	// TABLE … AS SELECT over Iceberg tables materializes a dataset on the data nodes, DROP TABLE
	// of a dataset frees it, CreateDataset and Load work, and a query a ready dataset answers
	// reads the dataset. It must attach datasets to Memory.
	Datasets DatasetRegistry
	// DataNodes counts the data nodes new work goes to (nil: none), for EXPLAIN to show the
	// distributed plan a query would run as.
	DataNodes func() int
}

// DatasetRegistry is what the engine asks of the head's registry of materialized datasets
// (cluster.Datasets): the engine plans a dataset into a job, the registry places and makes it.
type DatasetRegistry interface {
	// Reuse returns the dataset held under name when its fingerprint is fingerprint.
	Reuse(name, fingerprint string, progress func(cluster.Progress)) (cluster.DatasetInfo, bool)
	// Create makes the dataset job describes on the data nodes.
	Create(ctx context.Context, job cluster.DatasetJob, progress func(cluster.Progress)) (cluster.DatasetInfo, error)
	// Drop frees the dataset held under name; false when there is none.
	Drop(name string) bool
	// ByFingerprint returns a ready dataset whose plan has fingerprint.
	ByFingerprint(fingerprint string) (cluster.DatasetInfo, bool)
	// Hit counts one read of the dataset name.
	Hit(name string)
	// Lookup returns the dataset held under name.
	Lookup(name string) (cluster.DatasetInfo, bool)
	// Ingest makes a dataset of rows a client sent on the data nodes.
	Ingest(ctx context.Context, job cluster.IngestJob, progress func(cluster.Progress)) (cluster.DatasetInfo, error)
	// PartSpecs groups a divisible query's scan tasks (their estimated bytes) into a dataset's
	// partitions: partitions of them, or a default per alive data node when 0.
	PartSpecs(taskBytes []int64, partitions int) []cluster.PartSpec
	// CanPlace reports whether a data node is alive (or, none being alive, suspect) to hold
	// a new dataset's partitions.
	CanPlace() bool
}

var _ DatasetRegistry = (*cluster.Datasets)(nil)

// Engine executes statements against its catalog. It is safe for concurrent use.
type Engine struct {
	cfg     Config
	catalog *memcat.Catalog
	// tables resolves names across catalog and cfg.Sources for queries.
	tables *catalog.Set
	// writeMu serializes statements that change table contents.
	writeMu sync.Mutex
	// datasets is the head's dataset registry (Config.Datasets; nil without a cluster).
	datasets DatasetRegistry
	// analyzer runs EXPLAIN ANALYZE over the data nodes (SetDistributedAnalyzer; nil: none).
	analyzer atomic.Pointer[DistributedAnalyzer]
	// epochOrders keeps the orders of the epochs being planned: every rank and worker of a job
	// plans its read of the same epoch.
	epochOrders *cluster.EpochOrders
}

// DistributedAnalyzer runs query (SQL text, in the Session of ctx) over the data nodes with
// every process measuring its operators, and returns the text of the analyzed distributed
// plan; ok is false when the query does not run over data nodes (it is then analyzed here).
type DistributedAnalyzer func(ctx context.Context, query string) (text string, ok bool, err error)

// SetDistributedAnalyzer makes EXPLAIN ANALYZE run queries that divide among data nodes with
// a, as they run for clients, instead of in this process alone.
func (e *Engine) SetDistributedAnalyzer(a DistributedAnalyzer) {
	e.analyzer.Store(&a)
}

// Result is the outcome of one statement. For a query, Reader streams the rows (the caller
// releases it) and Schema is its schema; for any other statement Reader is nil and
// RowsAffected counts the rows it changed.
type Result struct {
	Schema       *arrow.Schema
	Reader       array.RecordReader
	RowsAffected int64
}

// Prepared describes a statement without running it.
type Prepared struct {
	// IsQuery is true for statements that return rows (SELECT, EXPLAIN).
	IsQuery bool
	// Schema is the result schema of a query (nil otherwise). With unbound parameters, column
	// types that depend on a parameter are reported as they would be for a NULL.
	Schema *arrow.Schema
	// NumParams is the number of ? placeholders.
	NumParams int
	// ParamTypes types each placeholder from where it stands (sql.BindPrepare). Schema is the
	// result of values of these types: convert values to them before Execute, so the rows
	// match Schema.
	ParamTypes []arrow.DataType
	// Pins are the versions of the versioned (Iceberg) tables the statement resolved; run it
	// with them in its Session to read the same snapshots.
	Pins map[string]string
	// SQL is the text to run for the statement: the text prepared, or a read of the dataset
	// that holds its result (Dataset).
	SQL string
	// Dataset names the materialized dataset that answers the query ("" for none).
	Dataset string
}

// Catalog returns the engine's own catalog, which receives DDL.
func (e *Engine) Catalog() catalog.MutableCatalog { return e.catalog }

// Catalogs returns every catalog queries can name: the engine's own and the sources.
func (e *Engine) Catalogs() *catalog.Set { return e.tables }

// Execute runs one statement. params are bound to ? placeholders in order.
func (e *Engine) Execute(ctx context.Context, sqlText string, params []scalar.Scalar) (*Result, error) {
	return e.execute(ctx, sqlText, params)
}

// Prepare parses and binds one statement without running it.
func (e *Engine) Prepare(ctx context.Context, sqlText string) (*Prepared, error) {
	return e.prepare(ctx, sqlText)
}
