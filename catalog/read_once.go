package catalog

import "context"

type readOnceKey struct{}

// WithReadOnce marks reads under ctx as reads whose rows the caller keeps itself (a dataset
// partition being made): caches of source data, such as the Iceberg column cache, serve such a
// read from what they hold but do not keep what it reads for later.
func WithReadOnce(ctx context.Context) context.Context {
	return context.WithValue(ctx, readOnceKey{}, true)
}

// ReadOnce reports whether ctx was marked by WithReadOnce.
func ReadOnce(ctx context.Context) bool {
	once, _ := ctx.Value(readOnceKey{}).(bool)
	return once
}
