package exec

import (
	"context"
	"slices"
	"testing"

	"github.com/cachedb/cachedb/internal/errs"
)

// evalOver evaluates e over a one-column int64 batch of outer values and formats the result.
func evalOver(t *testing.T, tc *TaskContext, e Expr, outer ...any) ([]string, error) {
	t.Helper()
	rows := make([][]any, len(outer))
	for i, v := range outer {
		rows[i] = []any{v}
	}
	b := batchOf(t, tc.Alloc, schemaOf("o", opInt64), rows...)
	defer b.Release()
	res, err := e.Eval(context.Background(), tc, b)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	out := make([]string, res.Len())
	for i := range out {
		out[i] = "NULL"
		if res.IsValid(i) {
			out[i] = res.ValueStr(i)
		}
	}
	return out, nil
}

// setOf is a one-column subquery plan over values.
func setOf(t *testing.T, tc *TaskContext, values ...any) Operator {
	rows := make([][]any, len(values))
	for i, v := range values {
		rows[i] = []any{v}
	}
	return rowsSource(t, tc, schemaOf("s", opInt64), rows...)
}

func TestInSubqueryNullSemantics(t *testing.T) {
	cases := []struct {
		name    string
		set     []any
		negated bool
		want    []string // for needles 1, 3, NULL
	}{
		{"in plain set", []any{1, 2}, false, []string{"true", "false", "NULL"}},
		{"in set with NULL", []any{1, nil}, false, []string{"true", "NULL", "NULL"}},
		{"in empty set", nil, false, []string{"false", "false", "false"}},
		{"not in plain set", []any{1, 2}, true, []string{"false", "true", "NULL"}},
		{"not in set with NULL", []any{1, nil}, true, []string{"false", "NULL", "NULL"}},
		{"not in empty set", nil, true, []string{"true", "true", "true"}},
	}
	for _, c := range cases {
		for _, correlated := range []bool{false, true} {
			t.Run(c.name, func(t *testing.T) {
				tc := newTestContext(t, 0)
				e := NewInSubquery(intCol(0, "o"), setOf(t, tc, c.set...), c.negated, correlated)
				got, err := evalOver(t, tc, e, 1, 3, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("got %q, want %q", got, c.want)
				}
			})
		}
	}
}

func TestExists(t *testing.T) {
	cases := []struct {
		set     []any
		negated bool
		want    string
	}{
		{[]any{nil}, false, "true"},
		{nil, false, "false"},
		{[]any{1, 2}, true, "false"},
		{nil, true, "true"},
	}
	for _, c := range cases {
		tc := newTestContext(t, 0)
		got, err := evalOver(t, tc, NewExists(setOf(t, tc, c.set...), c.negated, false), 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{c.want, c.want}; !slices.Equal(got, want) {
			t.Errorf("exists(%v) negated=%v: got %q, want %q", c.set, c.negated, got, want)
		}
	}
}

func TestScalarSubquery(t *testing.T) {
	tc := newTestContext(t, 0)
	got, err := evalOver(t, tc, NewScalarSubquery(setOf(t, tc, 7), false), 1, 2, 3)
	if err != nil || !slices.Equal(got, []string{"7", "7", "7"}) {
		t.Errorf("one row: got %q, %v", got, err)
	}
	got, err = evalOver(t, tc, NewScalarSubquery(setOf(t, tc), false), 1, 2)
	if err != nil || !slices.Equal(got, []string{"NULL", "NULL"}) {
		t.Errorf("no row: got %q, %v", got, err)
	}
	_, err = evalOver(t, tc, NewScalarSubquery(setOf(t, tc, 1, 2), false), 1)
	if errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("two rows: err = %v, want invalid input", err)
	}
}

func TestCorrelatedSubqueries(t *testing.T) {
	tc := newTestContext(t, 0)
	inner := setOf(t, tc, 1, 2, 3, 3)
	// SELECT s FROM inner WHERE s = outer.o
	matching := NewFilter(inner, cmpTest("=", intCol(0, "s"), NewOuterColumn(1, 0, "o", opInt64)))

	got, err := evalOver(t, tc, NewExists(matching, false, true), 1, 5, nil)
	if err != nil || !slices.Equal(got, []string{"true", "false", "false"}) {
		t.Errorf("correlated exists: got %q, %v", got, err)
	}
	got, err = evalOver(t, tc, NewScalarSubquery(matching, true), 2, 5)
	if err != nil || !slices.Equal(got, []string{"2", "NULL"}) {
		t.Errorf("correlated scalar: got %q, %v", got, err)
	}
	if _, err = evalOver(t, tc, NewScalarSubquery(matching, true), 3); errs.CategoryOf(err) != errs.InvalidInput {
		t.Errorf("correlated scalar with two rows: err = %v, want invalid input", err)
	}
	// o IN (SELECT s FROM inner WHERE s > outer.o)
	greater := NewFilter(inner, cmpTest(">", intCol(0, "s"), NewOuterColumn(1, 0, "o", opInt64)))
	got, err = evalOver(t, tc, NewInSubquery(intCol(0, "o"), greater, false, true), 1, 3)
	if err != nil || !slices.Equal(got, []string{"false", "false"}) {
		t.Errorf("correlated in: got %q, %v", got, err)
	}
}
