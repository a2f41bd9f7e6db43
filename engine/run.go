package engine

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/internal/errs"
)

// New returns an engine over a fresh in-memory catalog.
func New(cfg Config) (*Engine, error) {
	if cfg.CatalogName == "" {
		cfg.CatalogName = "cachedb"
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 2
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 8192
	}
	if cfg.Alloc == nil {
		cfg.Alloc = memory.DefaultAllocator
	}
	return &Engine{cfg: cfg, catalog: memcat.NewCatalog(cfg.CatalogName)}, nil
}

func (e *Engine) execute(ctx context.Context, sqlText string, params []scalar.Scalar) (*Result, error) {
	return nil, errs.Unsupportedf("not implemented yet")
}

func (e *Engine) prepare(ctx context.Context, sqlText string) (*Prepared, error) {
	return nil, errs.Unsupportedf("not implemented yet")
}
