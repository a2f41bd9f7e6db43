package main

import (
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/cachedb/cachedb/flightsql"
)

func TestLimitFlagsReachTheServerOptions(t *testing.T) {
	var l limitFlags
	cmd := &cobra.Command{}
	l.register(cmd)
	if got := l.apply(flightsql.Options{}); got.MaxPreparedPerClient != flightsql.DefaultMaxPreparedPerClient ||
		got.MaxConcurrentPerClient != flightsql.DefaultMaxConcurrentPerClient || got.MaxPreparedStatements != flightsql.DefaultMaxPreparedStatements ||
		got.MaxRecvBytes != flightsql.DefaultMaxRecvBytes {
		t.Errorf("defaults: %+v", got)
	}
	err := cmd.ParseFlags([]string{"--max-prepared-per-client=3", "--max-prepared-statements=30", "--max-concurrent-per-client=2", "--max-message-bytes=1048576"})
	if err != nil {
		t.Fatal(err)
	}
	if err := flagsFromEnv(cmd.Flags(), func(name string) (string, bool) {
		return "5m", name == envPrefix+"PREPARED_STATEMENT_IDLE"
	}); err != nil {
		t.Fatal(err)
	}
	got := l.apply(flightsql.Options{Version: "v"})
	if got.MaxPreparedPerClient != 3 || got.MaxPreparedStatements != 30 || got.MaxConcurrentPerClient != 2 || got.PreparedStatementIdle != 5*time.Minute || got.Version != "v" ||
		got.MaxRecvBytes != 1<<20 {
		t.Errorf("flags and environment gave %+v", got)
	}
}
