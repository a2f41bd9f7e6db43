package engine

import (
	"context"
	"strings"
	"testing"
)

func TestStatementAccess(t *testing.T) {
	ctx := context.Background()
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Execute(ctx, "CREATE TABLE t (x BIGINT)", nil); err != nil {
		t.Fatal(err)
	}
	for query, want := range map[string]Access{
		"SELECT * FROM t": AccessRead,
		"SELECT (SELECT count(*) FROM demo), ? FROM t": AccessRead,
		"EXPLAIN ANALYZE SELECT * FROM t":              AccessRead,
		"USE cachedb":                                  AccessRead,
		"SET @x = 1":                                   AccessRead,
		"CREATE TABLE u (y INT)":                       AccessWrite,
		"CREATE TABLE u AS SELECT * FROM t":            AccessWrite, // no dataset registry: a memory table
		"INSERT INTO t VALUES (1)":                     AccessWrite,
		"INSERT INTO t SELECT x FROM t":                AccessWrite,
		"UPDATE t SET x = 2":                           AccessWrite,
		"DELETE FROM t WHERE x = ?":                    AccessWrite,
		"DROP TABLE t":                                 AccessWrite,
		"DROP TABLE IF EXISTS nothing":                 AccessWrite,
		"CREATE VIEW v AS SELECT * FROM t":             AccessWrite,
	} {
		got, _, err := e.StatementAccess(ctx, query)
		if err != nil || got != want {
			t.Errorf("StatementAccess(%s) = %v, %v; want %v", query, got, err, want)
		}
	}
	// The tables a change names, resolved in the engine's own catalog.
	for query, want := range map[string]string{
		"SELECT * FROM t":                       "",
		"CREATE TABLE u (y INT)":                "cachedb.u",
		"INSERT INTO cachedb.t SELECT x FROM t": "cachedb.t",
		"UPDATE `public`.t SET x = 2":           "cachedb.t",
		"DROP TABLE IF EXISTS t, nothing":       "cachedb.t cachedb.nothing",
		"CREATE VIEW v AS SELECT * FROM t":      "cachedb.v",
		"CREATE INDEX i ON t (x)":               "cachedb.t",
	} {
		_, targets, err := e.StatementAccess(ctx, query)
		var got []string
		for _, tg := range targets {
			if !tg.Own {
				t.Errorf("%s: target %+v is not the engine's own", query, tg)
			}
			got = append(got, tg.Catalog+"."+tg.Name)
		}
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("StatementAccess(%s) targets %v, %v; want %s", query, got, err, want)
		}
	}
	// Nothing ran: the table is still there and empty.
	res, err := e.Execute(ctx, "SELECT count(*) FROM t", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Reader.Release()
	if !res.Reader.Next() || res.Reader.RecordBatch().Column(0).ValueStr(0) != "0" {
		t.Error("classifying ran a statement")
	}
	if _, _, err := e.StatementAccess(ctx, "SELEC 1"); err == nil {
		t.Error("a statement that does not parse was classified")
	}
}
