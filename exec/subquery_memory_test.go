package exec

import (
	"fmt"
	"testing"
)

// TestSubquerySetsReserveMemory: IN and quantified subquery sets are reserved from the query's
// memory (a limit below the set fails with ResourceExhausted), and their reservations end with
// the query cache or, uncached and correlated, with each evaluation (limitedContext checks
// that nothing stays reserved).
func TestSubquerySetsReserveMemory(t *testing.T) {
	values := make([]any, 2000)
	for i := range values {
		values[i] = i
	}
	type build func(plan Operator, correlated bool) Expr
	kinds := map[string]build{
		"in": func(plan Operator, correlated bool) Expr {
			return NewInSubquery(NewColumn(0, "o", opInt64), plan, false, correlated)
		},
		"= any": func(plan Operator, correlated bool) Expr {
			e, err := NewQuantifiedSubquery(NewColumn(0, "o", opInt64), "=", false, plan, correlated)
			if err != nil {
				panic(err)
			}
			return e
		},
	}
	for name, mk := range kinds {
		for _, cached := range []bool{false, true} {
			for _, correlated := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/cached=%v/correlated=%v", name, cached, correlated), func(t *testing.T) {
					tc, pool := limitedContext(t, 0, 1<<20)
					if cached {
						tc.Cache = NewQueryCache()
						defer tc.Cache.Release()
					}
					got, err := evalOver(t, tc, mk(setOf(t, tc, values...), correlated), 5, 5000, nil)
					if err != nil {
						t.Fatal(err)
					}
					if fmt.Sprint(got) != "[true false NULL]" {
						t.Fatalf("got %v", got)
					}
					if pool.Stats().Peak == 0 {
						t.Fatal("the set reserved nothing")
					}

					small, _ := limitedContext(t, 0, 4<<10)
					if cached {
						small.Cache = NewQueryCache()
						defer small.Cache.Release()
					}
					_, err = evalOver(t, small, mk(setOf(t, small, values...), correlated), 5)
					wantExhausted(t, err)
				})
			}
		}
	}
}
