package sql

import (
	"sort"
	"testing"

	"github.com/cachedb/cachedb/planner"
)

// subqueryPlans returns the plans of the subquery expressions found in p's own expressions and
// those of its descendants, in walk order.
func subqueryPlans(p planner.Plan) []planner.Plan {
	var out []planner.Plan
	var visitExpr func(e planner.Expr)
	visitExpr = func(e planner.Expr) {
		switch e := e.(type) {
		case *planner.ScalarSubquery:
			out = append(out, e.Plan)
		case *planner.Exists:
			out = append(out, e.Plan)
		case *planner.InSubquery:
			visitExpr(e.Expr)
			out = append(out, e.Plan)
		case *planner.Call:
			for _, a := range e.Args {
				visitExpr(a)
			}
		}
	}
	var walk func(p planner.Plan)
	walk = func(p planner.Plan) {
		for _, e := range planner.PlanExprs(p) {
			visitExpr(e)
		}
		for _, c := range p.Children() {
			walk(c)
		}
	}
	walk(p)
	return out
}

func freeIDs(p planner.Plan) []int {
	var ids []int
	for id := range planner.FreeColumns(p) {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	return ids
}

// TestCorrelatedSubqueries checks that a name a subquery cannot resolve itself binds to the
// enclosing query's column (innermost first), and that uncorrelated subqueries have no free
// columns.
func TestCorrelatedSubqueries(t *testing.T) {
	tests := []struct {
		name, sql string
		free      [][]int // free column IDs of each subquery, in walk order
	}{
		// t1 gets IDs 1-3; the subquery's t2 gets 4-5.
		{"exists", "select c from t1 where exists (select 1 from t2 where t2.a = t1.a)", [][]int{{1}}},
		{"unqualified outer name", "select c from t1 where exists (select 1 from t2 where d = b)", [][]int{{2}}},
		{"inner name wins", "select c from t1 where a in (select a from t2)", [][]int{nil}},
		{"scalar in select list", "select (select max(d) from t2 where t2.a = t1.b) from t1", [][]int{{2}}},
		{"not in", "select c from t1 where a not in (select a from t2 where d > b)", [][]int{{2}}},
		// In a grouped query, a correlated reference to a group key reads the key's output
		// column (ID 4), not the input column.
		{"grouped outer reference", "select a, (select count(*) from t2 where t2.a = t1.a) from t1 group by a", [][]int{{4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := bindStatement(t, tt.sql, nil).(*planner.Query)
			subs := subqueryPlans(q.Plan)
			if len(subs) != len(tt.free) {
				t.Fatalf("found %d subqueries, want %d\n%s", len(subs), len(tt.free), planner.Format(q.Plan))
			}
			for i, s := range subs {
				got := freeIDs(s)
				if len(got) != len(tt.free[i]) || len(got) > 0 && got[0] != tt.free[i][0] {
					t.Errorf("subquery %d free columns = %v, want %v\n%s", i, got, tt.free[i], planner.Format(s))
				}
			}
		})
	}
}

// TestDerivedTableIsNotCorrelated checks that a derived table cannot see the outer query.
func TestDerivedTableIsNotCorrelated(t *testing.T) {
	_, err := bindErr(t, "select * from t1, (select b from t2) as x")
	if err == nil || categoryName(err) != "not found" {
		t.Fatalf("derived table resolved an outer column: err = %v", err)
	}
}
