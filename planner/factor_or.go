package planner

import "github.com/apache/arrow-go/v18/arrow"

// factorDisjunctions rewrites each condition of conds that is an OR whose every operand
// (an AND of terms) shares some terms into those shared terms AND the OR of what is left:
// (A AND B) OR (A AND C) becomes A AND (B OR C), and (A AND B) OR A becomes A. AND and OR
// distribute over each other in SQL's three-valued logic too, so the result is the same for
// every row; what changes is that A, now a conjunct of its own, can be pushed down or become a
// join key (TPC-H Q19 repeats its join condition in every branch of an OR). Terms holding a
// subquery are never shared: their text does not identify them. It reports whether anything
// changed.
func factorDisjunctions(conds []Expr) ([]Expr, bool) {
	var out []Expr
	changed := false
	for _, c := range conds {
		factored, ok := factorOr(c)
		if !ok {
			out = append(out, c)
			continue
		}
		changed = true
		out = append(out, factored...)
	}
	return out, changed
}

// factorOr is factorDisjunctions of one condition; false when c is no OR or its operands share
// nothing.
func factorOr(c Expr) ([]Expr, bool) {
	branches := chain(c, "or")
	if len(branches) < 2 {
		return nil, false
	}
	terms := make([][]Expr, len(branches))
	keys := make([][]string, len(branches))
	for i, b := range branches {
		terms[i] = conjuncts(b)
		keys[i] = make([]string, len(terms[i]))
		for j, t := range terms[i] {
			keys[i][j] = factorKey(t)
		}
	}
	// The shared terms: those of the first branch present in every other one.
	var shared []Expr
	sharedKeys := map[string]bool{}
	for j, t := range terms[0] {
		k := keys[0][j]
		if k == "" || sharedKeys[k] {
			continue
		}
		inAll := true
		for i := 1; i < len(branches) && inAll; i++ {
			inAll = containsKey(keys[i], k)
		}
		if inAll {
			shared = append(shared, t)
			sharedKeys[k] = true
		}
	}
	if len(shared) == 0 {
		return nil, false
	}
	var rest []Expr
	for i := range branches {
		var left []Expr
		for j, t := range terms[i] {
			if !sharedKeys[keys[i][j]] {
				left = append(left, t)
			}
		}
		if len(left) == 0 {
			// This branch is just the shared terms: the OR holds whenever they do.
			return shared, true
		}
		rest = append(rest, and(left...))
	}
	return append(shared, or(rest...)), true
}

// factorKey identifies a term by its text and type; "" for one that must not be shared.
func factorKey(e Expr) string {
	if HasSubquery(e) {
		return ""
	}
	return e.String() + "::" + e.Type().String()
}

func containsKey(keys []string, k string) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

// or joins conditions with OR, as a balanced tree (no pass recurses once per operand).
func or(es ...Expr) Expr {
	if len(es) == 1 {
		return es[0]
	}
	half := len(es) / 2
	return &Call{Func: "or", Args: []Expr{or(es[:half]...), or(es[half:]...)}, T: arrow.FixedWidthTypes.Boolean}
}
