package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestIntersectAndExcept(t *testing.T) {
	e := newTestEngine(t)
	setupT1(t, e)
	cases := []struct {
		sql  string
		want []string
	}{
		// t1.a: 1..5; t2.a: 1, 3, 3, NULL.
		{"SELECT a FROM t1 INTERSECT SELECT a FROM t2 ORDER BY 1", []string{"1", "3"}},
		{"SELECT a FROM t1 EXCEPT SELECT a FROM t2 ORDER BY a DESC", []string{"5", "4", "2"}},
		{"SELECT a FROM t2 EXCEPT SELECT a FROM t1", []string{"NULL"}},
		{"SELECT a FROM t2 INTERSECT SELECT a FROM t2 ORDER BY 1", []string{"NULL", "1", "3"}},
		// INTERSECT binds tighter: 5 ∪ ({1..5} ∩ {1,3}).
		{"SELECT 5 UNION SELECT a FROM t1 INTERSECT SELECT a FROM t2 ORDER BY 1", []string{"1", "3", "5"}},
		// EXCEPT and UNION apply left to right.
		{"SELECT a FROM t1 EXCEPT SELECT a FROM t2 UNION SELECT 1 ORDER BY 1 LIMIT 2", []string{"1", "2"}},
	}
	for _, c := range cases {
		if got := rows(t, e, c.sql); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, want %v", c.sql, got, c.want)
		}
	}
	if _, err := e.Execute(context.Background(), "SELECT a FROM t1 INTERSECT ALL SELECT a FROM t2", nil); errs.CategoryOf(err) != errs.Unsupported {
		t.Errorf("INTERSECT ALL: %v, want unsupported", err)
	}
	if _, err := e.Execute(context.Background(), "SELECT a, b FROM t1 EXCEPT SELECT a FROM t2", nil); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("column count mismatch: %v, want invalid input", err)
	}
}
