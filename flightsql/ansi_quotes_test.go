package flightsql

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"

	"github.com/cachedb/cachedb/engine"
)

// TestANSIQuotesThroughADBC: double-quoted names as ANSI clients write them (pandas' DROP TABLE
// "t", SELECT * FROM "t") work without any setting when MySQL's dialect cannot parse them,
// while a statement MySQL parses keeps MySQL's meaning ("a" is a string); SET sql_mode =
// 'ANSI_QUOTES' makes every double-quoted token a name for the session's later statements,
// prepared ones included, and setting sql_mode to the empty string ends it.
func TestANSIQuotesThroughADBC(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	cnxn := ts.sessionConn(t)
	adbcUpdate(t, cnxn, `CREATE TABLE "quoted t" (a BIGINT, "b""x" VARCHAR(10))`)
	adbcUpdate(t, cnxn, "INSERT INTO `quoted t` VALUES (1, 'one'), (2, 'two \"2\"')")

	want := func(query string, rows ...string) {
		t.Helper()
		_, got := adbcQuery(t, cnxn, query)
		if strings.Join(got, ";") != strings.Join(rows, ";") {
			t.Errorf("%s: rows %v, want %v", query, got, rows)
		}
	}
	// MySQL's dialect first: these parse, and "a" is a string.
	want(`SELECT "a" FROM `+"`quoted t`"+` ORDER BY a`, "a", "a")
	want(`SELECT a FROM ` + "`quoted t`" + ` WHERE "b""x" = 'one'`)
	// Only ANSI_QUOTES parses these: they name the table and its columns.
	want(`SELECT a, "b""x" FROM "quoted t" ORDER BY "a"`, `1,one`, `2,two "2"`)
	want(`SELECT count(*) FROM "cachedb"."public"."quoted t"`, "2")

	runSession(t, cnxn, "SET SESSION sql_mode = 'STRICT_TRANS_TABLES,ANSI_QUOTES'")
	want(`SELECT "a" FROM "quoted t" ORDER BY a`, "1", "2")
	want("SELECT @@sql_mode", "ANSI_QUOTES,STRICT_TRANS_TABLES")
	// The idiom that drops one mode keeps the others.
	runSession(t, cnxn, "SET SESSION sql_mode = (SELECT REPLACE(@@sql_mode, 'STRICT_TRANS_TABLES', ''))")
	want("SELECT @@sql_mode", "ANSI_QUOTES")
	want("SELECT @@global.sql_mode LIKE 'ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,%'", "1") // the server's
	want(`SELECT "a" FROM "quoted t" ORDER BY a`, "1", "2")
	want(`SELECT "a" FROM "quoted t" WHERE "b""x" = 'two "2"' -- "not a name"`, "2")

	// A prepared statement of the session reads the same way.
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(`SELECT "b""x" FROM "quoted t" WHERE "a" = 1`); err != nil {
		t.Fatal(err)
	}
	if err := stmt.Prepare(testContext(t)); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := stmt.ExecuteQuery(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := renderRows(t, rdr); len(got) != 1 || got[0] != "one" {
		t.Errorf("prepared under ANSI_QUOTES: %v, want [one]", got)
	}
	rdr.Release()

	// Another connection has its own session: MySQL's dialect.
	if _, got := adbcQuery(t, ts.sessionConn(t), `SELECT "a" FROM `+"`quoted t`"+` LIMIT 1`); len(got) != 1 || got[0] != "a" {
		t.Errorf("a second connection: %v, want the string a", got)
	}
	// An unknown mode is refused, and the session keeps ANSI_QUOTES.
	err = trySQL(cnxn, "SET sql_mode = 'ANSI_QUOTES,NO_SUCH_MODE'")
	var ae adbc.Error
	if !errors.As(err, &ae) || ae.Code != adbc.StatusInvalidArgument || !strings.Contains(err.Error(), "Variable 'sql_mode' can't be set to the value of 'NO_SUCH_MODE'") {
		t.Errorf("an unknown mode: %v, want InvalidArgument in MySQL's words", err)
	}
	want(`SELECT "a" FROM "quoted t" ORDER BY a`, "1", "2")

	runSession(t, cnxn, "SET sql_mode = ''")
	want(`SELECT "a" FROM `+"`quoted t`"+` ORDER BY a`, "a", "a")
	if _, err := tryQuery(context.Background(), cnxn, `SELECT "nope" FROM "quoted t"`); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("an unknown column read as ANSI: %v, want an error naming it", err)
	}
}
