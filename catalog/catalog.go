// Package catalog defines what the engine knows about tables: where they are, what columns they
// have and how to read them. Concrete sources live in subpackages (memory, iceberg); the engine
// sees them only through these interfaces.
package catalog

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Catalog resolves table names. Names are matched case-insensitively, as MySQL does on most
// platforms; the stored spelling is what Table.Name returns.
type Catalog interface {
	// Name is the catalog's name as Flight SQL clients see it.
	Name() string
	// Table returns the named table, or an errs.NotFound error.
	Table(ctx context.Context, name string) (Table, error)
	// TableNames lists the tables, sorted.
	TableNames(ctx context.Context) ([]string, error)
}

// NamespacedCatalog is a catalog whose tables live in namespaces (Iceberg). Its Table accepts
// "ns.table" (namespace levels joined by dots) and a bare "table" in DefaultNamespace; a name
// may end in "@version" (a snapshot id, a timestamp or a branch or tag name) to pin an older
// state. TableNames lists qualified "ns.table" names.
type NamespacedCatalog interface {
	Catalog
	// DefaultNamespace is where unqualified names are looked up ("" when there is none).
	DefaultNamespace() string
	// Namespaces lists the namespaces, dotted, sorted.
	Namespaces(ctx context.Context) ([]string, error)
	// TablesIn lists the table names (unqualified) of one namespace, sorted.
	TablesIn(ctx context.Context, namespace string) ([]string, error)
}

// MutableCatalog is a catalog that accepts DDL.
type MutableCatalog interface {
	Catalog
	// CreateTable creates an empty table. It fails with errs.AlreadyExists unless ifNotExists.
	CreateTable(ctx context.Context, name string, schema *arrow.Schema, ifNotExists bool) (Table, error)
	// DropTable removes a table. It fails with errs.NotFound unless ifExists.
	DropTable(ctx context.Context, name string, ifExists bool) error
}

// Table is a readable table.
type Table interface {
	Name() string
	// Schema is the table's Arrow schema. Field nullability is honoured.
	Schema() *arrow.Schema
	// Scan plans a read. The returned tasks are pinned to the table's state at the time of the
	// call (for a memory table) or at the time the Table was resolved (for a versioned source
	// such as Iceberg, whose Table is one snapshot): rows appended later are not seen by them.
	Scan(ctx context.Context, req ScanRequest) (*ScanPlan, error)
}

// VersionedTable is a table pinned to one version of a source that keeps versions (an Iceberg
// snapshot).
type VersionedTable interface {
	Table
	// Version is the name suffix ("@<snapshot id>") that resolves this same version again, or ""
	// when there is nothing to pin (a table with no snapshot yet).
	Version() string
}

// InsertableTable is a table that accepts appended rows.
type InsertableTable interface {
	Table
	// Append adds the batch's rows atomically. The batch must have the table's schema; the
	// table retains it.
	Append(ctx context.Context, batch arrow.RecordBatch) error
}

// ScanRequest says what a scan needs. Sources may use it to read less; the engine still applies
// the query's whole filter to every row a source returns.
type ScanRequest struct {
	// Columns are indexes into the table schema, in the order the scan must output them.
	// Nil means all columns.
	Columns []int
	// Limit is a row limit a source may stop at (0 = none). Only set when no filter remains.
	Limit int64
	// Filter is implied by the query's condition: a source may skip any data it can prove has
	// no row satisfying it (files, row groups, partitions), and may ignore any part of it.
	Filter Filter
}

// ScanPlan is a planned read: its tasks and what the source can say about them.
type ScanPlan struct {
	// Tasks are the independently readable pieces, one exec partition each.
	Tasks []ScanTask
	// Explain summarizes the source's planning for EXPLAIN on one line, as space-separated
	// key=value pairs (e.g. "snapshot=… files=3/12 row_groups=… bytes_planned=…"); empty when
	// there is nothing to say.
	Explain string
	// Fetched, when set, reports what the plan's tasks have read from storage so far, in the
	// same key=value form (e.g. "bytes_fetched=… requests=…"), for EXPLAIN ANALYZE. It is safe
	// to call concurrently with the tasks.
	Fetched func() string
}

// ScanTask is one independently readable piece of a scan: a unit of parallelism.
type ScanTask interface {
	// Open streams the task's rows with the projected columns. Memory for new buffers comes from
	// mem. The caller releases the reader.
	Open(ctx context.Context, mem memory.Allocator) (array.RecordReader, error)
	// EstimatedRows is a hint for planning (-1 if unknown).
	EstimatedRows() int64
}

// SizedTask is a ScanTask that knows roughly how many bytes it reads from storage, so that
// tasks can be spread over data nodes by bytes rather than by count.
type SizedTask interface {
	ScanTask
	EstimatedBytes() int64
}

// LocatedTask is a ScanTask whose rows are held by one data node (a partition of a materialized
// dataset): a divided query reads it there, through an endpoint located at that node.
type LocatedTask interface {
	ScanTask
	// Location is the Flight address (HOST:PORT) of the data node holding the rows; "" when
	// they are held by this process.
	Location() string
}

// ReplaceableTable is a table whose whole contents can be swapped at once (UPDATE and DELETE on
// memory tables rewrite the table).
type ReplaceableTable interface {
	InsertableTable
	// Replace makes batches the table's contents atomically. Scans planned before keep reading
	// the old contents.
	Replace(ctx context.Context, batches []arrow.RecordBatch) error
}

// ViewCatalog is a catalog that also stores views: named queries expanded where they are
// referenced. Views and tables share one namespace.
type ViewCatalog interface {
	// View returns the query text of the named view, and whether it exists.
	View(ctx context.Context, name string) (string, bool)
	// CreateView stores a view. It fails with errs.AlreadyExists when a table or (unless
	// orReplace) a view of that name exists.
	CreateView(ctx context.Context, name, query string, orReplace bool) error
	// DropView removes a view. It fails with errs.NotFound unless ifExists.
	DropView(ctx context.Context, name string, ifExists bool) error
}

// IndexCatalog records the indexes clients declare. Memory tables are scanned rather than
// indexed, so an index is only a name to create and drop, but its bookkeeping follows SQL: a
// second CREATE of one name or a DROP of a missing one is an error.
type IndexCatalog interface {
	CreateIndex(ctx context.Context, table, name string) error
	DropIndex(ctx context.Context, table, name string) error
}

// TriggerCatalog records triggers by name. cachedb runs no trigger bodies; the SQL layer admits
// only triggers whose body is empty, so recording them is all there is to do.
type TriggerCatalog interface {
	// CreateTrigger fails with errs.AlreadyExists when the name is taken (unless ifNotExists)
	// and errs.NotFound when the table does not exist.
	CreateTrigger(ctx context.Context, name, table string, ifNotExists bool) error
	// DropTrigger fails with errs.NotFound unless ifExists.
	DropTrigger(ctx context.Context, name string, ifExists bool) error
}
