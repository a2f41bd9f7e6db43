package main

import (
	"context"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/engine"
)

// load generates the table once, writing every batch both to a Parquet file at parquetPath
// (for DuckDB) and into table t of the engine, so both systems see exactly the same rows.
func load(ctx context.Context, eng *engine.Engine, gen generator, parquetPath string) error {
	f, err := os.Create(parquetPath)
	if err != nil {
		return fmt.Errorf("creating %s: %w", parquetPath, err)
	}
	defer f.Close()
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(1<<20),
	)
	w, err := pqarrow.NewFileWriter(tableSchema, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return fmt.Errorf("starting Parquet file: %w", err)
	}
	tbl, err := eng.Catalog().CreateTable(ctx, "t", tableSchema, false)
	if err != nil {
		return fmt.Errorf("creating table t: %w", err)
	}
	ins, ok := tbl.(catalog.InsertableTable)
	if !ok {
		return fmt.Errorf("table t of the engine's catalog does not accept rows")
	}
	for i := 0; i < gen.batches(); i++ {
		rec, err := gen.batch(memory.DefaultAllocator, i)
		if err != nil {
			return err
		}
		if err := w.WriteBuffered(rec); err != nil {
			rec.Release()
			return fmt.Errorf("writing Parquet: %w", err)
		}
		err = ins.Append(ctx, rec)
		rec.Release()
		if err != nil {
			return fmt.Errorf("appending to t: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("finishing Parquet file: %w", err)
	}
	return nil
}
