// Package icebergtest writes small Iceberg tables for tests elsewhere in cachedb (which may not
// import iceberg-go themselves): a SQL catalog in a SQLite file and a local warehouse directory,
// written with iceberg-go's own writer.
package icebergtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"

	cachedbiceberg "github.com/cachedb/cachedb/catalog/iceberg"
)

// storedName is the name the catalog's rows are stored under in SQLite.
const storedName = "test"

// WriteReader is Write with the batches of rdr, which it reads to the end and releases.
func WriteReader(ctx context.Context, dir, catalogName, ns, name string, rdr array.RecordReader) (cachedbiceberg.Config, error) {
	defer rdr.Release()
	var batches []arrow.RecordBatch
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	for rdr.Next() {
		b := rdr.RecordBatch()
		b.Retain()
		batches = append(batches, b)
	}
	if err := rdr.Err(); err != nil {
		return cachedbiceberg.Config{}, err
	}
	if len(batches) == 0 {
		// An empty table: one batch of no rows carries its schema.
		empty := array.NewRecordBuilder(memory.DefaultAllocator, rdr.Schema())
		batches = append(batches, empty.NewRecordBatch())
		empty.Release()
	}
	return Write(ctx, dir, catalogName, ns, name, batches...)
}

// Write creates, in directory dir, a SQL catalog holding table ns.name with the rows
// of batches (a catalog Write made there before keeps its tables, so several calls with one dir
// make one catalog of several tables) (which share one schema; the table gets fresh field IDs, and each append is one
// snapshot of one data file per batch), and returns the configuration that opens it as the
// catalog called catalogName with ns as its default namespace.
func Write(ctx context.Context, dir, catalogName, ns, name string, batches ...arrow.RecordBatch) (cachedbiceberg.Config, error) {
	if len(batches) == 0 {
		return cachedbiceberg.Config{}, fmt.Errorf("icebergtest: no batches for %s.%s", ns, name)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return cachedbiceberg.Config{}, err
	}
	dbPath := filepath.Join(abs, "catalog.db")
	warehouse := "file://" + filepath.ToSlash(filepath.Join(abs, "warehouse"))
	db, err := sql.Open(sqliteshim.ShimName, "file:"+dbPath)
	if err != nil {
		return cachedbiceberg.Config{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	cat, err := sqlcat.NewCatalog(storedName, db, sqlcat.SQLite, iceberg.Properties{
		"warehouse": warehouse, "init_catalog_tables": "true",
	})
	if err != nil {
		return cachedbiceberg.Config{}, fmt.Errorf("icebergtest: catalog: %w", err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return cachedbiceberg.Config{}, fmt.Errorf("icebergtest: namespace %s: %w", ns, err)
	}
	sc, err := table.ArrowSchemaToIcebergWithFreshIDs(batches[0].Schema(), false)
	if err != nil {
		return cachedbiceberg.Config{}, fmt.Errorf("icebergtest: schema: %w", err)
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{ns, name}, sc)
	if err != nil {
		return cachedbiceberg.Config{}, fmt.Errorf("icebergtest: creating %s.%s: %w", ns, name, err)
	}
	for _, b := range batches {
		rdr, err := array.NewRecordReader(b.Schema(), []arrow.RecordBatch{b})
		if err != nil {
			return cachedbiceberg.Config{}, err
		}
		tbl, err = tbl.Append(ctx, rdr, nil)
		rdr.Release()
		if err != nil {
			return cachedbiceberg.Config{}, fmt.Errorf("icebergtest: appending to %s.%s: %w", ns, name, err)
		}
	}
	if err := db.Close(); err != nil {
		return cachedbiceberg.Config{}, err
	}
	return cachedbiceberg.Config{
		Name: catalogName, Type: cachedbiceberg.TypeSQL, URI: "sqlite:///" + filepath.ToSlash(dbPath), Warehouse: warehouse,
		DefaultNamespace: ns, Properties: map[string]string{cachedbiceberg.PropCatalogName: storedName},
	}, nil
}
