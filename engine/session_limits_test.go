package engine

import (
	"context"
	"testing"
	"time"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestSetSessionReadsTheLimits(t *testing.T) {
	e, err := New(Config{NoDemo: true})
	if err != nil {
		t.Fatal(err)
	}
	start := Session{Catalog: "c", MemoryLimit: 5, StatementTimeout: time.Second}
	tests := []struct {
		sql     string
		want    Session
		invalid errs.Category
	}{
		{sql: "SET max_execution_time = 1500", want: Session{Catalog: "c", MemoryLimit: 5, StatementTimeout: 1500 * time.Millisecond}},
		{sql: "SET SESSION max_execution_time = '2m'", want: Session{Catalog: "c", MemoryLimit: 5, StatementTimeout: 2 * time.Minute}},
		{sql: "SET @@session.MAX_EXECUTION_TIME = DEFAULT", want: Session{Catalog: "c", MemoryLimit: 5}},
		{sql: "SET @@cachedb_memory_limit = '256MiB', max_execution_time = 0", want: Session{Catalog: "c", MemoryLimit: 256 << 20}},
		{sql: "SET cachedb_memory_limit = 1048576", want: Session{Catalog: "c", MemoryLimit: 1 << 20, StatementTimeout: time.Second}},
		{sql: "SET NAMES utf8mb4", want: start},
		{sql: "SET autocommit = 1, @x = 2", want: start},
		{sql: "SET max_execution_time = -1", invalid: errs.InvalidInput},
		{sql: "SET max_execution_time = 'soon'", invalid: errs.InvalidInput},
		{sql: "SET cachedb_memory_limit = 'lots'", invalid: errs.InvalidInput},
		{sql: "SET cachedb_memory_limit = 1 + 1", invalid: errs.InvalidInput},
		{sql: "SET GLOBAL max_execution_time = 5", invalid: errs.Unsupported},
		{sql: "SET sql_mode = 'ANSI_QUOTES'", want: Session{Catalog: "c", MemoryLimit: 5, StatementTimeout: time.Second, ANSIQuotes: true}},
		{sql: "SET SESSION sql_mode = 'strict_trans_tables, ansi_quotes'", want: Session{Catalog: "c", MemoryLimit: 5, StatementTimeout: time.Second, ANSIQuotes: true}},
		{sql: "SET @@session.sql_mode = 'ANSI'", want: Session{Catalog: "c", MemoryLimit: 5, StatementTimeout: time.Second, ANSIQuotes: true}},
		{sql: "SET sql_mode = 'TRADITIONAL'", want: start},
		{sql: "SET sql_mode = ''", want: start},
		{sql: "SET sql_mode = 'ANSI_QUOTES', sql_mode = DEFAULT", want: start},
		{sql: "SET sql_mode = 'ANSI_QUOTES,NO_SUCH_MODE'", invalid: errs.InvalidInput},
		{sql: "SET sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')", invalid: errs.InvalidInput},
		{sql: "SET GLOBAL sql_mode = 'ANSI_QUOTES'", invalid: errs.Unsupported},
	}
	for _, tt := range tests {
		got, ok, err := e.SetSession(tt.sql, start)
		if !ok {
			t.Errorf("%s: not read as SET", tt.sql)
			continue
		}
		if tt.invalid != 0 || err != nil {
			if errs.CategoryOf(err) != tt.invalid || tt.invalid == 0 {
				t.Errorf("%s: %v, want category %v", tt.sql, err, tt.invalid)
			}
			continue
		}
		if got.Catalog != tt.want.Catalog || got.MemoryLimit != tt.want.MemoryLimit || got.StatementTimeout != tt.want.StatementTimeout || got.ANSIQuotes != tt.want.ANSIQuotes {
			t.Errorf("%s: %+v, want %+v", tt.sql, got, tt.want)
		}
	}
	if _, ok, _ := e.SetSession("SELECT 1", start); ok {
		t.Error("SELECT 1 read as SET")
	}
	on := Session{ANSIQuotes: true}
	if got, _, err := e.SetSession("SET sql_mode = ''", on); err != nil || got.ANSIQuotes {
		t.Errorf("SET sql_mode = '' under ANSI_QUOTES: %+v, %v; want it off", got, err)
	}
	if _, _, err := e.SetSession("SET sql_mode = 'BOGUS'", on); err == nil || err.Error() != "Variable 'sql_mode' can't be set to the value of 'BOGUS'" {
		t.Errorf("unknown mode: %v", err)
	}
}

func TestSessionTextReadsDoubleQuotesUnderANSIQuotes(t *testing.T) {
	const text = `SELECT "a" FROM t WHERE b = 'x "y"'`
	if got := SessionText(context.Background(), text); got != text {
		t.Errorf("without ANSI_QUOTES: %q, want the text unchanged", got)
	}
	ctx := WithSession(context.Background(), Session{ANSIQuotes: true})
	if got, want := SessionText(ctx, text), "SELECT `a` FROM t WHERE b = 'x \"y\"'"; got != want {
		t.Errorf("under ANSI_QUOTES: %q, want %q", got, want)
	}
}
