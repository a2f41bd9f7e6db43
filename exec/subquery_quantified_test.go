package exec

import (
	"slices"
	"testing"
)

func TestQuantifiedSubqueryNullSemantics(t *testing.T) {
	cases := []struct {
		op   string
		all  bool
		set  []any
		want []string // for needles 1, 2, 3, NULL
	}{
		{">", false, []any{1, 2}, []string{"false", "true", "true", "NULL"}},
		{">", true, []any{1, 2}, []string{"false", "false", "true", "NULL"}},
		{">=", true, []any{2, nil}, []string{"false", "NULL", "NULL", "NULL"}},
		{"<", false, []any{2, nil}, []string{"true", "NULL", "NULL", "NULL"}},
		{"<=", true, []any{2, 3}, []string{"true", "true", "false", "NULL"}},
		{"=", true, []any{2, 2}, []string{"false", "true", "false", "NULL"}},
		{"=", true, []any{2, nil}, []string{"false", "NULL", "false", "NULL"}},
		{"<>", false, []any{2, 2}, []string{"true", "false", "true", "NULL"}},
		{"=", false, []any{3, nil}, []string{"NULL", "NULL", "true", "NULL"}},
		{"<>", true, []any{3}, []string{"true", "true", "false", "NULL"}},
		{">", false, nil, []string{"false", "false", "false", "false"}},
		{">", true, nil, []string{"true", "true", "true", "true"}},
		{"<", false, []any{nil}, []string{"NULL", "NULL", "NULL", "NULL"}},
	}
	for _, c := range cases {
		for _, correlated := range []bool{false, true} {
			tc := newTestContext(t, 0)
			e, err := NewQuantifiedSubquery(intCol(0, "o"), c.op, c.all, setOf(t, tc, c.set...), correlated)
			if err != nil {
				t.Fatal(err)
			}
			got, err := evalOver(t, tc, e, 1, 2, 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%s (correlated %v) over %v: got %q, want %q", e, correlated, c.set, got, c.want)
			}
		}
	}
}
