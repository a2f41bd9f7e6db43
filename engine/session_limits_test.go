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
		{sql: "SET sql_mode = 'ANSI_QUOTES,NO_SUCH_MODE'", invalid: errs.InvalidInput},
		{sql: "SET sql_mode = NULL", invalid: errs.InvalidInput},
		{sql: "SET sql_mode = CONCAT('ANSI_QUOTES,', 'NOPE')", invalid: errs.InvalidInput},
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
		if got.Catalog != tt.want.Catalog || got.MemoryLimit != tt.want.MemoryLimit || got.StatementTimeout != tt.want.StatementTimeout || got.SQLMode != nil {
			t.Errorf("%s: %+v, want %+v", tt.sql, got, tt.want)
		}
	}
	if _, ok, _ := e.SetSession("SELECT 1", start); ok {
		t.Error("SELECT 1 read as SET")
	}
}

// SET sql_mode keeps the session's modes as MySQL reports them (@@sql_mode): combination modes
// expanded, in MySQL's order; expressions see the session's @@sql_mode; DEFAULT goes back to
// the server's. ANSI_QUOTES, alone or through ANSI, is what changes how statements read.
func TestSetSessionSQLMode(t *testing.T) {
	e, err := New(Config{NoDemo: true})
	if err != nil {
		t.Fatal(err)
	}
	ansi := "ANSI_QUOTES"
	tests := []struct {
		from      *string
		sql, want string // want "": the server's default (SQLMode nil)
		quotes    bool
	}{
		{sql: "SET sql_mode = 'ANSI_QUOTES'", want: "ANSI_QUOTES", quotes: true},
		{sql: "SET SESSION sql_mode = 'strict_trans_tables, ansi_quotes'", want: "ANSI_QUOTES,STRICT_TRANS_TABLES", quotes: true},
		{sql: "SET @@session.sql_mode = 'ANSI'", want: "REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ONLY_FULL_GROUP_BY,ANSI", quotes: true},
		{sql: "SET sql_mode = 'TRADITIONAL'", want: "STRICT_TRANS_TABLES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,TRADITIONAL,NO_ENGINE_SUBSTITUTION"},
		{sql: "SET sql_mode = ''", want: "-"},
		{sql: "SET sql_mode = 'ANSI_QUOTES', sql_mode = DEFAULT", want: ""},
		{sql: "SET sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')", want: "ANSI_QUOTES,ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION", quotes: true},
		// The idiom that drops one mode keeps the session's others.
		{from: &ansi, sql: "SET SESSION sql_mode=(SELECT REPLACE(@@sql_mode,'ONLY_FULL_GROUP_BY',''))", want: "ANSI_QUOTES", quotes: true},
		{sql: "SET SESSION sql_mode=(SELECT REPLACE(@@sql_mode,'ONLY_FULL_GROUP_BY',''))", want: "STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"},
		{from: &ansi, sql: "SET sql_mode = REPLACE(@@sql_mode, 'ANSI_QUOTES', '')", want: "-"},
	}
	for _, tt := range tests {
		got, _, err := e.SetSession(tt.sql, Session{SQLMode: tt.from})
		if err != nil {
			t.Errorf("%s: %v", tt.sql, err)
			continue
		}
		mode := ""
		if got.SQLMode != nil {
			mode = *got.SQLMode
			if mode == "" {
				mode = "-"
			}
		}
		if mode != tt.want || got.ANSIQuotes() != tt.quotes {
			t.Errorf("%s: mode %q (ANSI quotes %v), want %q (%v)", tt.sql, mode, got.ANSIQuotes(), tt.want, tt.quotes)
		}
	}
	if _, _, err := e.SetSession("SET sql_mode = 'BOGUS'", Session{}); err == nil || err.Error() != "Variable 'sql_mode' can't be set to the value of 'BOGUS'" {
		t.Errorf("unknown mode: %v", err)
	}
	// @@sql_mode reads the session's.
	for _, tt := range []struct {
		mode *string
		want string
	}{{nil, "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"}, {&ansi, "ANSI_QUOTES"}} {
		v, err := e.evalText(WithSession(context.Background(), Session{SQLMode: tt.mode}), "@@sql_mode")
		if err != nil || v == nil || *v != tt.want {
			t.Errorf("@@sql_mode: %v, %v; want %s", v, err, tt.want)
		}
	}
}

func TestSessionTextReadsDoubleQuotesUnderANSIQuotes(t *testing.T) {
	const text = `SELECT "a" FROM t WHERE b = 'x "y"'`
	if got := SessionText(context.Background(), text); got != text {
		t.Errorf("without ANSI_QUOTES: %q, want the text unchanged", got)
	}
	ansi := "ANSI_QUOTES"
	ctx := WithSession(context.Background(), Session{SQLMode: &ansi})
	if got, want := SessionText(ctx, text), "SELECT `a` FROM t WHERE b = 'x \"y\"'"; got != want {
		t.Errorf("under ANSI_QUOTES: %q, want %q", got, want)
	}
}
