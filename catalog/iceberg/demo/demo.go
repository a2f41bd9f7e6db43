// Package demo generates the embedded Iceberg warehouse that `cachedb serve` falls back to when
// it has no configuration: a SQL catalog in a SQLite file plus a local warehouse directory,
// holding the demo table demo.rides. The table is written with iceberg-go's own writer, the
// path users take, so what cachedb reads from it is what it would read from any other Iceberg
// table.
//
// Layout under the directory given to Ensure:
//
//	demo-v1 -> gen-XXXX          symlink naming the published generation
//	gen-XXXX/catalog.db          SQL catalog (iceberg-go / pyiceberg JDBC layout), catalog name "demo"
//	gen-XXXX/warehouse/demo.db/rides/{metadata,data}/
//
// Iceberg metadata records absolute file locations, so a warehouse cannot be built in a
// temporary directory and renamed afterwards. Instead each generation is built in its own
// directory at its final location and published by creating the symlink, which is atomic and
// fails when it already exists: of several concurrent starts the first to finish wins, the
// others delete their copy and use the winner's. A generation that was never published
// (a crash, a lost race) is never read and is removed by a later Ensure once it is a day old.
package demo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"

	cachedbiceberg "github.com/cachedb/cachedb/catalog/iceberg"
	"github.com/cachedb/cachedb/internal/errs"
)

const (
	// CatalogName is the name the SQL catalog's rows are stored under.
	CatalogName = "demo"
	// Namespace holds the demo tables.
	Namespace = "demo"

	// linkName names the published generation. Its version changes whenever the generated
	// content changes, so an old warehouse is not mistaken for the current one.
	linkName    = "demo-v1"
	genPrefix   = "gen-"
	catalogFile = "catalog.db"
	dataDir     = "warehouse"
	// staleAfter is the age past which an unpublished generation is considered abandoned;
	// generating takes seconds.
	staleAfter = 24 * time.Hour
)

// Warehouse describes the generated warehouse.
type Warehouse struct {
	// CatalogURI is the SQLite catalog, in SQLAlchemy's absolute form "sqlite:////abs/catalog.db"
	// (what pyiceberg's SqlCatalog and cachedb's SQL catalog accept).
	CatalogURI string
	// Warehouse is the warehouse location, "file:///abs/warehouse".
	Warehouse string
	// CatalogName is the name rows are stored under in the SQL catalog tables.
	CatalogName string
	// Namespace holds the tables.
	Namespace string
	// Tables are the tables of Namespace.
	Tables []string
}

// Ensure creates the warehouse under dir when it does not exist yet and returns it. It is
// idempotent: once a warehouse is published, Ensure only looks it up. Concurrent calls, in one
// process or several, end with one warehouse that all of them return.
func Ensure(ctx context.Context, dir string) (Warehouse, error) {
	if strings.TrimSpace(dir) == "" {
		return Warehouse{}, errs.Invalidf("embedded warehouse: no directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Warehouse{}, wrap(errs.InvalidInput, err, "embedded warehouse: directory %s", dir)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return Warehouse{}, wrap(errs.Internal, err, "embedded warehouse: creating directory %s", abs)
	}
	// A round ends with a published generation unless another process published first; the
	// next round then finds that one. The third covers a link removed in between.
	for range 3 {
		gen, ok, err := published(abs)
		if err != nil {
			return Warehouse{}, err
		}
		if ok {
			removeAbandoned(abs, gen)
			return describe(gen), nil
		}
		gen, err = os.MkdirTemp(abs, genPrefix)
		if err != nil {
			return Warehouse{}, wrap(errs.Internal, err, "embedded warehouse: creating a directory in %s", abs)
		}
		if err := os.Chmod(gen, 0o755); err != nil {
			_ = os.RemoveAll(gen)
			return Warehouse{}, wrap(errs.Internal, err, "embedded warehouse: %s", gen)
		}
		start := time.Now()
		slog.Info("generating the embedded Iceberg warehouse", "dir", gen, "table", Namespace+"."+RidesTable, "rows", RidesRows)
		if err := generate(ctx, gen); err != nil {
			_ = os.RemoveAll(gen)
			if ctx.Err() != nil {
				return Warehouse{}, wrap(errs.Canceled, err, "embedded warehouse: generation in %s stopped", abs)
			}
			return Warehouse{}, err
		}
		err = os.Symlink(filepath.Base(gen), filepath.Join(abs, linkName))
		if err == nil {
			slog.Info("generated the embedded Iceberg warehouse", "dir", gen, "took", time.Since(start).Round(time.Millisecond))
			return describe(gen), nil
		}
		_ = os.RemoveAll(gen)
		if !errors.Is(err, fs.ErrExist) {
			return Warehouse{}, wrap(errs.Internal, err, "embedded warehouse: publishing %s", gen)
		}
		// Another process published first; the next round returns its generation.
	}
	return Warehouse{}, errs.Internalf("embedded warehouse: %s keeps changing under concurrent starts", filepath.Join(abs, linkName))
}

// published returns the published generation's directory, if there is one. A link whose
// generation has disappeared (deleted by hand) is removed so that a new one is generated.
func published(abs string) (string, bool, error) {
	link := filepath.Join(abs, linkName)
	target, err := os.Readlink(link)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, wrap(errs.Internal, err, "embedded warehouse: reading %s (remove it to regenerate the warehouse)", link)
	}
	gen := target
	if !filepath.IsAbs(gen) {
		gen = filepath.Join(abs, gen)
	}
	_, err = os.Stat(filepath.Join(gen, catalogFile))
	switch {
	case err == nil:
		return gen, true, nil
	case errors.Is(err, fs.ErrNotExist):
		// Re-read right before removing, so a link another process has just replaced
		// survives (the window left is one system call wide).
		if again, _ := os.Readlink(link); again == target {
			slog.Warn("the embedded warehouse's catalog is gone; regenerating it", "link", link, "missing", filepath.Join(gen, catalogFile))
			if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", false, wrap(errs.Internal, err, "embedded warehouse: removing the dangling link %s", link)
			}
		}
		return "", false, nil
	default:
		return "", false, wrap(errs.Internal, err, "embedded warehouse: %s", filepath.Join(gen, catalogFile))
	}
}

// removeAbandoned deletes generations other than current that are older than staleAfter:
// leftovers of crashed or lost generations. Failures only leave garbage behind.
func removeAbandoned(abs, current string) {
	entries, err := os.ReadDir(abs)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), genPrefix) || e.Name() == filepath.Base(current) {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < staleAfter {
			continue
		}
		if err := os.RemoveAll(filepath.Join(abs, e.Name())); err == nil {
			slog.Info("removed an abandoned embedded warehouse generation", "dir", filepath.Join(abs, e.Name()))
		}
	}
}

func describe(gen string) Warehouse {
	return Warehouse{
		CatalogURI:  "sqlite:///" + filepath.ToSlash(filepath.Join(gen, catalogFile)),
		Warehouse:   fileURI(filepath.Join(gen, dataDir)),
		CatalogName: CatalogName,
		Namespace:   Namespace,
		Tables:      []string{RidesTable},
	}
}

func fileURI(path string) string { return "file://" + filepath.ToSlash(path) }

// generate builds a complete warehouse in gen: the catalog database, the namespace and the
// rides table with its two snapshots and the tag on the first.
func generate(ctx context.Context, gen string) error {
	dbPath := filepath.Join(gen, catalogFile)
	db, err := sql.Open(sqliteshim.ShimName, "file:"+dbPath)
	if err != nil {
		return wrap(errs.Internal, err, "embedded warehouse: opening SQLite catalog %s", dbPath)
	}
	defer db.Close()
	// One connection: SQLite serializes writers anyway, and a second connection could only
	// meet "database is locked".
	db.SetMaxOpenConns(1)

	cat, err := sqlcat.NewCatalog(CatalogName, db, sqlcat.SQLite, iceberg.Properties{
		"warehouse":           fileURI(filepath.Join(gen, dataDir)),
		"init_catalog_tables": "true",
	})
	if err != nil {
		return wrap(errs.Internal, err, "embedded warehouse: creating SQL catalog %s", dbPath)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{Namespace}, iceberg.Properties{
		"comment": "demo tables generated by cachedb",
	}); err != nil {
		return wrap(errs.Internal, err, "embedded warehouse: creating namespace %s in %s", Namespace, dbPath)
	}
	if err := writeRides(ctx, cat); err != nil {
		return wrap(errs.Internal, err, "embedded warehouse: writing table %s.%s in %s", Namespace, RidesTable, gen)
	}
	if err := db.Close(); err != nil {
		return wrap(errs.Internal, err, "embedded warehouse: closing SQLite catalog %s", dbPath)
	}
	return nil
}

// writeRides creates demo.rides and writes it as two appends: InitialDays days, then the
// rest. The first snapshot is tagged InitialTag.
func writeRides(ctx context.Context, cat *sqlcat.Catalog) error {
	ident := table.Identifier{Namespace, RidesTable}
	order, err := ridesSortOrder()
	if err != nil {
		return err
	}
	spec := ridesSpec()
	tbl, err := cat.CreateTable(ctx, ident, ridesSchema(),
		icecat.WithPartitionSpec(&spec),
		icecat.WithSortOrder(order),
		icecat.WithProperties(iceberg.Properties{
			"comment":                     "synthetic taxi rides with model features and a binary label, generated by cachedb",
			table.ParquetRowGroupLimitKey: fmt.Sprint(RowGroupRows),
		}))
	if err != nil {
		return fmt.Errorf("creating the table: %w", err)
	}

	g := newRidesGen()
	sc := ridesArrowSchema()
	appendDays := func(tbl *table.Table, from, to int, what string) (*table.Table, error) {
		// One batch per day: the writer sorts each batch, so each day's file is sorted.
		batches := make([]arrow.RecordBatch, 0, to-from)
		defer func() {
			for _, b := range batches {
				b.Release()
			}
		}()
		for d := from; d < to; d++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			batches = append(batches, g.batch(memory.DefaultAllocator, sc, g.day(d)))
		}
		rdr, err := array.NewRecordReader(sc, batches)
		if err != nil {
			return nil, err
		}
		defer rdr.Release()
		out, err := tbl.Append(ctx, rdr, iceberg.Properties{"cachedb.demo": what})
		if err != nil {
			return nil, fmt.Errorf("appending days %d to %d: %w", from+1, to, err)
		}
		return out, nil
	}
	if tbl, err = appendDays(tbl, 0, InitialDays, "initial load"); err != nil {
		return err
	}
	first := tbl.CurrentSnapshot().SnapshotID
	if tbl, err = appendDays(tbl, InitialDays, RidesDays, "second load"); err != nil {
		return err
	}
	if _, _, err := cat.CommitTable(ctx, ident,
		[]table.Requirement{table.AssertTableUUID(tbl.Metadata().TableUUID()), table.AssertRefSnapshotID(InitialTag, nil)},
		[]table.Update{table.NewSetSnapshotRefUpdate(InitialTag, first, table.TagRef, 0, 0, 0)},
	); err != nil {
		return fmt.Errorf("tagging snapshot %d as %s: %w", first, InitialTag, err)
	}
	return nil
}

// wrap categorizes err with a message naming what failed.
func wrap(c errs.Category, err error, format string, args ...any) error {
	return &errs.Error{Category: c, Msg: fmt.Sprintf(format, args...), Err: err}
}

// CatalogConfig is the configuration that serves the warehouse as the Iceberg catalog name,
// with the demo namespace as its default.
func (w Warehouse) CatalogConfig(name string) cachedbiceberg.Config {
	return cachedbiceberg.Config{
		Name: name, Type: cachedbiceberg.TypeSQL, URI: w.CatalogURI, Warehouse: w.Warehouse,
		DefaultNamespace: w.Namespace, Properties: map[string]string{cachedbiceberg.PropCatalogName: w.CatalogName},
	}
}
