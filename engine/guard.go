package engine

import (
	"context"

	"github.com/cachedb/cachedb/catalog"
)

type guardKey struct{}

// WithGuard returns ctx whose statements read only the tables g allows (catalog.Guard): every
// name a statement bound in ctx resolves passes g first, and information_schema lists only what
// g lets the caller read. The server sets it from the caller's grants; nil allows everything.
func WithGuard(ctx context.Context, g catalog.Guard) context.Context {
	return context.WithValue(ctx, guardKey{}, g)
}

// guardFrom returns the guard ctx carries (nil if none).
func guardFrom(ctx context.Context) catalog.Guard {
	g, _ := ctx.Value(guardKey{}).(catalog.Guard)
	return g
}
