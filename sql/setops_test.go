package sql

import (
	"fmt"
	"testing"
)

func TestSplitSetOps(t *testing.T) {
	ops, kinds, ok := splitSetOps("SELECT a FROM t WHERE s = 'x EXCEPT y' INTERSECT (SELECT b FROM u EXCEPT SELECT c FROM v) EXCEPT ALL SELECT 1 UNION DISTINCT SELECT 2")
	if !ok || len(ops) != 4 {
		t.Fatalf("got %d operands (ok %v): %q", len(ops), ok, ops)
	}
	want := []setOp{{setIntersect, false}, {setExcept, true}, {setUnion, false}}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("operators %v, want %v", kinds, want)
	}
	if _, _, ok := splitSetOps("SELECT 1 UNION SELECT 2"); ok {
		t.Error("a plain UNION is vitess's to parse")
	}
}
