package slt

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// Conn runs SQL against a database. Implementations need not be safe for concurrent use: the
// runner issues one call at a time per Conn, but it may abandon a call that overran its
// timeout and Close the Conn from another goroutine once that call has returned.
type Conn interface {
	// Exec runs a statement that returns no rows.
	Exec(ctx context.Context, sql string) error
	// Query runs a query and hands each result batch to onBatch, in order. The batch is only
	// valid during the call. onBatch is called once with an empty batch carrying the schema
	// when the result has no rows, so the column count can always be checked.
	Query(ctx context.Context, sql string, onBatch func(arrow.RecordBatch) error) error
	Close() error
}

// Backend is a database the runner owns for the length of one test file: in production a
// freshly started `cachedb serve` process, so tables of one file never meet another's.
type Backend interface {
	// Connect opens a new connection. The runner opens another one after a call times out.
	Connect(ctx context.Context) (Conn, error)
	// Failure reports why the database went away (the server process exited), or nil while it
	// is still up.
	Failure() error
	// Close shuts the database down and releases everything it holds.
	Close() error
}

// StartBackend starts a fresh backend for one test file.
type StartBackend func(ctx context.Context) (Backend, error)
