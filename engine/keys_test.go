package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/internal/errs"
)

// keyStep is one statement of a key scenario: it succeeds with affected rows, or fails with an
// error of category err whose message contains msg.
type keyStep struct {
	sql      string
	affected int64
	err      errs.Category
	msg      string
}

func ok(sql string, affected int64) keyStep { return keyStep{sql: sql, affected: affected, err: -1} }

func fails(sql string, err errs.Category, msg string) keyStep {
	return keyStep{sql: sql, err: err, msg: msg}
}

func TestPrimaryAndUniqueKeys(t *testing.T) {
	cases := []struct {
		name  string
		steps []keyStep
		query string
		want  string
	}{
		{"duplicate within one INSERT adds nothing", []keyStep{
			ok("CREATE TABLE t1(x INTEGER PRIMARY KEY, y VARCHAR(16))", 0),
			fails("INSERT INTO t1 VALUES (1, 'a'), (2, 'b'), (1, 'c')", errs.AlreadyExists, "Duplicate entry '1' for key 't1.PRIMARY'"),
			ok("INSERT INTO t1 VALUES (1, 'a'), (2, 'b')", 2),
		}, "SELECT x, y FROM t1 ORDER BY x", "[1,a 2,b]"},
		{"duplicate against existing rows, across batches of INSERT … SELECT", []keyStep{
			ok("CREATE TABLE src(v INTEGER)", 0),
			ok("INSERT INTO src VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9), (10)", 10),
			ok("CREATE TABLE t1(x INTEGER PRIMARY KEY)", 0),
			ok("INSERT INTO t1 VALUES (10)", 1),
			fails("INSERT INTO t1 SELECT v FROM src", errs.AlreadyExists, "Duplicate entry '10' for key 't1.PRIMARY'"),
			ok("INSERT INTO t1 SELECT v FROM src WHERE v < 10", 9),
		}, "SELECT count(*), sum(x) FROM t1", "[10,55]"},
		{"NULL in a primary key column", []keyStep{
			ok("CREATE TABLE t1(x INTEGER PRIMARY KEY, y VARCHAR(16))", 0),
			fails("INSERT INTO t1 VALUES (NULL, 'a')", errs.InvalidInput, "Column 'x' cannot be null"),
			fails("INSERT INTO t1(y) VALUES ('a')", errs.InvalidInput, "Column 'x' cannot be null"),
		}, "SELECT count(*) FROM t1", "[0]"},
		{"composite primary key", []keyStep{
			ok("CREATE TABLE t1(a INTEGER, b VARCHAR(8), c INTEGER, PRIMARY KEY (a, b))", 0),
			ok("INSERT INTO t1 VALUES (1, 'x', 0), (1, 'y', 0), (2, 'x', 0)", 3),
			fails("INSERT INTO t1 VALUES (1, 'y', 5)", errs.AlreadyExists, "Duplicate entry '1-y' for key 't1.PRIMARY'"),
			fails("INSERT INTO t1 VALUES (3, NULL, 5)", errs.InvalidInput, "Column 'b' cannot be null"),
		}, "SELECT a, b FROM t1 ORDER BY a, b", "[1,x 1,y 2,x]"},
		{"UNIQUE allows several NULLs", []keyStep{
			ok("CREATE TABLE t1(a INTEGER UNIQUE, b INTEGER)", 0),
			ok("INSERT INTO t1 VALUES (NULL, 1), (NULL, 2), (1, 3)", 3),
			ok("INSERT INTO t1 VALUES (NULL, 4)", 1),
			fails("INSERT INTO t1 VALUES (1, 5)", errs.AlreadyExists, "Duplicate entry '1' for key 't1.a'"),
		}, "SELECT count(*), count(a) FROM t1", "[4,1]"},
		{"named UNIQUE key and a prefix key", []keyStep{
			ok("CREATE TABLE t1(a TEXT, b INTEGER, c INTEGER, UNIQUE (a(1)), UNIQUE KEY bc (b, c))", 0),
			ok("INSERT INTO t1 VALUES ('bob', 1, 1), ('carl', 1, 2)", 2),
			fails("INSERT INTO t1 VALUES ('bill', 9, 9)", errs.AlreadyExists, "Duplicate entry 'b' for key 't1.a'"),
			fails("INSERT INTO t1 VALUES ('dan', 1, 2)", errs.AlreadyExists, "Duplicate entry '1-2' for key 't1.bc'"),
		}, "SELECT a FROM t1 ORDER BY a", "[bob carl]"},
		{"REPLACE with a primary key", []keyStep{
			ok("CREATE TABLE t1(x INTEGER PRIMARY KEY, y VARCHAR(16))", 0),
			ok("INSERT INTO t1 VALUES (1, 'true'), (0, 'false')", 2),
			ok("REPLACE INTO t1 VALUES (1, 'replace')", 2),
			ok("REPLACE INTO t1 VALUES (4, 'replace (new)')", 1),
			ok("REPLACE INTO t1 (y, x) VALUES ('a', 5), ('b', 5)", 3),
			ok("REPLACE INTO t1 SELECT x + 4, 'shifted' FROM t1 WHERE x < 2", 4),
		}, "SELECT x, y FROM t1 ORDER BY x", "[0,false 1,replace 4,shifted 5,shifted]"},
		{"REPLACE deletes every row holding one of the keys", []keyStep{
			ok("CREATE TABLE t1(a INTEGER PRIMARY KEY, b INTEGER UNIQUE)", 0),
			ok("INSERT INTO t1 VALUES (1, 10), (2, 20), (3, 30)", 3),
			ok("REPLACE INTO t1 VALUES (1, 20)", 3),
			fails("INSERT INTO t1 VALUES (4, 20)", errs.AlreadyExists, "for key 't1.b'"),
		}, "SELECT a, b FROM t1 ORDER BY a", "[1,20 3,30]"},
		{"REPLACE without keys is INSERT", []keyStep{
			ok("CREATE TABLE t1(a INTEGER, b INTEGER)", 0),
			ok("INSERT INTO t1 VALUES (1, 1)", 1),
			ok("REPLACE INTO t1 VALUES (1, 1), (1, 2)", 2),
		}, "SELECT count(*) FROM t1", "[3]"},
		{"INSERT IGNORE skips duplicates", []keyStep{
			ok("CREATE TABLE t1(a INTEGER PRIMARY KEY, b INTEGER)", 0),
			ok("INSERT INTO t1 VALUES (1, 1)", 1),
			ok("INSERT IGNORE INTO t1 VALUES (1, 2), (2, 2), (2, 3)", 1),
		}, "SELECT a, b FROM t1 ORDER BY a", "[1,1 2,2]"},
		{"UPDATE creating a duplicate fails and changes nothing", []keyStep{
			ok("CREATE TABLE t1(a INTEGER PRIMARY KEY, b INTEGER UNIQUE)", 0),
			ok("INSERT INTO t1 VALUES (1, 10), (2, 20), (3, NULL)", 3),
			fails("UPDATE t1 SET a = 2 WHERE a = 1", errs.AlreadyExists, "Duplicate entry '2' for key 't1.PRIMARY'"),
			fails("UPDATE t1 SET b = 20 WHERE a = 3", errs.AlreadyExists, "Duplicate entry '20' for key 't1.b'"),
			fails("UPDATE t1 SET a = NULL WHERE a = 3", errs.InvalidInput, "Column 'a' cannot be null"),
			ok("UPDATE t1 SET a = a + 10", 3),
			ok("UPDATE t1 SET b = NULL WHERE b IS NOT NULL", 2),
			ok("INSERT INTO t1 VALUES (1, 10)", 1),
			fails("INSERT INTO t1 VALUES (11, 0)", errs.AlreadyExists, "Duplicate entry '11'"),
		}, "SELECT a, b FROM t1 ORDER BY a", "[1,10 11,NULL 12,NULL 13,NULL]"},
		{"DELETE frees key values", []keyStep{
			ok("CREATE TABLE t1(a INTEGER PRIMARY KEY)", 0),
			ok("INSERT INTO t1 VALUES (1), (2)", 2),
			ok("DELETE FROM t1 WHERE a = 1", 1),
			ok("INSERT INTO t1 VALUES (1)", 1),
		}, "SELECT a FROM t1 ORDER BY a", "[1 2]"},
		{"DROP TABLE then re-create starts empty", []keyStep{
			ok("CREATE TABLE t1(a INTEGER PRIMARY KEY)", 0),
			ok("INSERT INTO t1 VALUES (1)", 1),
			ok("DROP TABLE t1", 0),
			ok("CREATE TABLE t1(a INTEGER PRIMARY KEY)", 0),
			ok("INSERT INTO t1 VALUES (1)", 1),
		}, "SELECT a FROM t1", "[1]"},
		{"bad key declarations", []keyStep{
			fails("CREATE TABLE t1(a INTEGER PRIMARY KEY, b INTEGER, PRIMARY KEY (b))", errs.InvalidInput, "Multiple primary key defined"),
			fails("CREATE TABLE t1(a INTEGER, UNIQUE (z))", errs.NotFound, "Key column 'z' doesn't exist in table"),
			ok("CREATE TABLE t1(a INTEGER)", 0),
		}, "SELECT count(*) FROM t1", "[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEngine(t)
			for _, s := range c.steps {
				r, err := e.Execute(context.Background(), s.sql, nil)
				switch {
				case s.err < 0 && err != nil:
					t.Fatalf("%s: %v", s.sql, err)
				case s.err < 0 && r.RowsAffected != s.affected:
					t.Errorf("%s: %d rows affected, want %d", s.sql, r.RowsAffected, s.affected)
				case s.err >= 0 && err == nil:
					t.Errorf("%s succeeded, want a %s error", s.sql, s.err)
				case s.err >= 0 && (errs.CategoryOf(err) != s.err || !strings.Contains(err.Error(), s.msg)):
					t.Errorf("%s: %v (%s), want %s containing %q", s.sql, err, errs.CategoryOf(err), s.err, s.msg)
				}
			}
			if got := fmt.Sprint(rows(t, e, c.query)); got != c.want {
				t.Errorf("%s: %s, want %s", c.query, got, c.want)
			}
		})
	}
}
