package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/cachedb/cachedb/flightsql"
)

// limitFlags are the per-client limits of a Flight SQL server (head or data node); a client is
// one gRPC connection.
type limitFlags struct {
	preparedPerClient   int
	preparedTotal       int
	concurrentPerClient int
	preparedIdle        time.Duration
	maxMessageBytes     int
}

func (l *limitFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&l.preparedPerClient, "max-prepared-per-client", flightsql.DefaultMaxPreparedPerClient, "prepared statements one client connection may hold open; one more is refused with ResourceExhausted")
	f.IntVar(&l.preparedTotal, "max-prepared-statements", flightsql.DefaultMaxPreparedStatements, "prepared statements all clients together may hold; beyond it the least recently used of the client holding the most is closed")
	f.IntVar(&l.concurrentPerClient, "max-concurrent-per-client", flightsql.DefaultMaxConcurrentPerClient, "statements one client connection may execute at once (result streams included); one more is refused with ResourceExhausted")
	f.IntVar(&l.maxMessageBytes, "max-message-bytes", flightsql.DefaultMaxRecvBytes, "largest gRPC message the server accepts: one batch of a bulk ingest (pandas to_sql, polars write_database) or of bound parameters")
	f.DurationVar(&l.preparedIdle, "prepared-statement-idle", flightsql.DefaultPreparedStatementIdle, "how long an unused prepared statement stays open")
}

// apply sets the limits on opts.
func (l limitFlags) apply(opts flightsql.Options) flightsql.Options {
	opts.MaxPreparedPerClient = l.preparedPerClient
	opts.MaxPreparedStatements = l.preparedTotal
	opts.MaxConcurrentPerClient = l.concurrentPerClient
	opts.PreparedStatementIdle = l.preparedIdle
	opts.MaxRecvBytes = l.maxMessageBytes
	return opts
}
