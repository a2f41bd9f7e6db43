package sql

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/planner"
)

// A prepared statement's placeholders are typed from where they stand, and the statement is
// bound with those types, so its result schema is what a run with such values yields.
func TestBindPrepareTypesParameters(t *testing.T) {
	for _, tc := range []struct{ sql, types string }{
		{"SELECT a FROM t1 WHERE a = ?", "[int64]"},
		{"SELECT ? + 1", "[int64]"},
		{"SELECT c FROM t1 WHERE c LIKE ?", "[utf8]"},
		{"SELECT ?", "[utf8]"},
		{"INSERT INTO t1 VALUES (?, ?, ?)", "[int64 int64 utf8]"},
		{"INSERT INTO t3 (y, x) VALUES (?, ?)", "[utf8 decimal(10, 2)]"},
		{"SELECT * FROM t2 WHERE d > ? AND a IN (?, ?)", "[float64 int64 int64]"},
		{"UPDATE t1 SET c = ? WHERE a = ?", "[utf8 int64]"},
		{"DELETE FROM t2 WHERE d BETWEEN ? AND ?", "[float64 float64]"},
		{"SELECT * FROM t1 LIMIT ?", "[int64]"},
		{"SELECT a FROM t1 WHERE a IN (SELECT x FROM t3 WHERE y = ?) AND ? = b", "[utf8 int64]"},
		{"SELECT CASE WHEN a > 0 THEN ? ELSE d END FROM t2", "[float64]"},
		{"SELECT CAST(? AS DATE)", "[date32]"},
	} {
		st, types, err := BindPrepare(context.Background(), tc.sql, testCatalog(t))
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if got := fmt.Sprint(types); got != tc.types {
			t.Errorf("%s: parameter types %s, want %s", tc.sql, got, tc.types)
		}
		if q, ok := st.(*planner.Query); ok && tc.sql == "SELECT ?" {
			if got := planner.OutputSchema(q.Plan).Field(0).Type; got.String() != "utf8" {
				t.Errorf("SELECT ? declares %s, want the parameter's type utf8", got)
			}
		}
	}
}

// A column computed from a parameter is named with ? as written, as MySQL names it.
func TestParameterColumnsNamedAsWritten(t *testing.T) {
	st, _, err := BindPrepare(context.Background(), "SELECT ?, ? + 1, ':v1'", testCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range planner.OutputSchema(st.(*planner.Query).Plan).Fields() {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, "|"); got != "?|? + 1|:v1" {
		t.Errorf("column names %s, want ?|? + 1|:v1 (a string literal is named by its value)", got)
	}
}
