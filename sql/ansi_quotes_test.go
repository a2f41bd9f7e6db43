package sql

import (
	"strings"
	"testing"

	"vitess.io/vitess/go/vt/sqlparser"
)

func TestANSIQuotes(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"table name", `DROP TABLE "t"`, "DROP TABLE `t`"},
		{"schema and table", `SELECT * FROM "public"."t"`, "SELECT * FROM `public`.`t`"},
		{"doubled quote inside", `SELECT "a""b" FROM t`, "SELECT `a\"b` FROM t"},
		{"backquote inside", "SELECT \"x`y\" FROM t", "SELECT `x``y` FROM t"},
		{"backslash is an ordinary character", `SELECT "a\" FROM t`, "SELECT `a\\` FROM t"},
		{"string with a double quote", `SELECT 'say "hi"', "c" FROM t`, "SELECT 'say \"hi\"', `c` FROM t"},
		{"escaped single quote", `SELECT 'it\'s "x"', "c" FROM t`, "SELECT 'it\\'s \"x\"', `c` FROM t"},
		{"doubled single quote", `SELECT 'it''s "x"', "c" FROM t`, "SELECT 'it''s \"x\"', `c` FROM t"},
		{"escaped backslash ends the string", `SELECT 'a\\', "c" FROM t`, "SELECT 'a\\\\', `c` FROM t"},
		{"backquoted name with a double quote", "SELECT `a\"b`, \"c\" FROM t", "SELECT `a\"b`, `c` FROM t"},
		{"backquoted doubled backquote", "SELECT `a``\"`, \"c\" FROM t", "SELECT `a``\"`, `c` FROM t"},
		{"block comment", `SELECT /* "x" */ "c" FROM t`, "SELECT /* \"x\" */ `c` FROM t"},
		{"hint comment keeps its quotes", `SELECT /*+ TRAINING(seed="7") */ "c" FROM t`, "SELECT /*+ TRAINING(seed=\"7\") */ `c` FROM t"},
		{"dash comment", "SELECT \"c\" -- \"x\" it's\nFROM \"t\"", "SELECT `c` -- \"x\" it's\nFROM `t`"},
		{"hash comment", "SELECT \"c\" # it's \"x\"\nFROM \"t\"", "SELECT `c` # it's \"x\"\nFROM `t`"},
		{"double slash comment", "SELECT \"c\" // it's \"x\"\nFROM \"t\"", "SELECT `c` // it's \"x\"\nFROM `t`"},
		{"minus minus is no comment", `SELECT 1--"c" FROM t`, "SELECT 1--`c` FROM t"},
		{"versioned comment is code", `SELECT /*!80000 "c" */ FROM t`, "SELECT /*!80000 `c` */ FROM t"},
		{"adjacent names", `SELECT "a""" "b" FROM t`, "SELECT `a\"` `b` FROM t"},
		{"utf-8 name", `SELECT "é€" FROM t`, "SELECT `é€` FROM t"},
	}
	for _, c := range cases {
		got, changed := ANSIQuotes(c.in)
		if !changed || got != c.want {
			t.Errorf("%s: ANSIQuotes(%q) = %q (changed %v), want %q", c.name, c.in, got, changed, c.want)
		}
	}
}

func TestANSIQuotesLeavesAlone(t *testing.T) {
	for _, in := range []string{
		"SELECT 1",
		`SELECT 'a "b" c' FROM t`,
		"SELECT `a\"b` FROM t",
		`SELECT 1 /* "x" */`,
		"SELECT 1 -- \"x\"",
		"SELECT 1 # \"x\"",
		`SELECT 'it\'s "x"'`,
		// Unterminated quotes and comments are the parser's to report.
		`SELECT "a FROM t`,
		`SELECT 'a "b" FROM t`,
		"SELECT `a \"b\" FROM t",
		`SELECT /* "a" FROM t`,
	} {
		if got, changed := ANSIQuotes(in); changed || got != in {
			t.Errorf("ANSIQuotes(%q) = %q (changed %v), want it unchanged", in, got, changed)
		}
	}
}

// The rewritten text names the identifiers ANSI_QUOTES names: printed back by the parser, the
// double-quoted names come out as the same backquoted identifiers.
func TestANSIQuotesParsesAsIdentifiers(t *testing.T) {
	stmt, err := parse(mustANSI(t, `SELECT "a""b", 'x"y' AS "s" FROM "my db"."t" WHERE "k" = 'it\'s'`))
	if err != nil {
		t.Fatal(err)
	}
	got := sqlparser.String(stmt)
	want := "select `a\"b`, 'x\"y' as s from `my db`.t where k = 'it\\'s'"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func mustANSI(t *testing.T, text string) string {
	t.Helper()
	out, ok := ANSIQuotes(text)
	if !ok {
		t.Fatalf("ANSIQuotes(%q) changed nothing", text)
	}
	return out
}

// A statement MySQL's dialect parses keeps its meaning (a double-quoted string stays a string);
// one that only ANSI_QUOTES parses is read that way; one that neither parses is the first
// error.
func TestParseFallsBackToANSIQuotes(t *testing.T) {
	cases := []struct{ in, want string }{
		{`SELECT "a" FROM t`, "select 'a' from t"},
		{`SELECT * FROM t WHERE c = "x"`, "select * from t where c = 'x'"},
		{`SELECT * FROM "t"`, "select * from t"},
		{`SELECT "a", "b" FROM "t"`, "select a, b from t"},
		{`DROP TABLE "t"`, "drop table t"},
		{`DELETE FROM "t"`, "delete from t"},
		{`SELECT * FROM "cachedb"."public"."t"`, "select * from `cachedb.public`.t"},
		{`SELECT AVG(ALL "a") FROM "t"`, "select avg(a) from t"},
	}
	for _, c := range cases {
		stmt, err := parse(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got := sqlparser.String(stmt); got != c.want {
			t.Errorf("%s: parsed as %s, want %s", c.in, got, c.want)
		}
	}
	_, err := parse(`SELECT * FROM "t" WHERE`)
	if err == nil || !strings.Contains(err.Error(), "syntax error") || !strings.Contains(err.Error(), "position 18 near 't'") {
		t.Errorf("a statement that parses neither way: got %v, want MySQL's syntax error at the string 't'", err)
	}
}
