package planner

// impliedFilters derives, from a condition over several relations that is an OR, a filter on
// each relation that every branch of the OR restricts: the OR of each branch's conjuncts that
// read only that relation. A joined row satisfying the condition satisfies some branch whole,
// so its row of that relation passes the derived filter; filtering the relation first loses
// nothing, and the condition still applies where it was. TPC-H Q7 (n1.n_name = 'FRANCE' AND
// n2.n_name = 'GERMANY' OR n1.n_name = 'GERMANY' AND n2.n_name = 'FRANCE') narrows each nation
// to two rows this way, and Q19 narrows both lineitem and part. The result maps a relation
// index (owner's) to its derived filter.
func impliedFilters(c Expr, owner map[ColumnID]int) map[int]Expr {
	branches := chain(c, "or")
	if len(branches) < 2 || HasSubquery(c) {
		return nil
	}
	perBranch := make([]map[int][]Expr, len(branches))
	for i, b := range branches {
		perBranch[i] = map[int][]Expr{}
		for _, t := range conjuncts(b) {
			rels := relsReadBy(t, owner)
			if len(rels) != 1 || !onlyOwned(t, owner) {
				continue
			}
			for r := range rels {
				perBranch[i][r] = append(perBranch[i][r], t)
			}
		}
	}
	out := map[int]Expr{}
	for r, first := range perBranch[0] {
		ors := []Expr{and(first...)}
		for _, m := range perBranch[1:] {
			terms, ok := m[r]
			if !ok {
				ors = nil
				break
			}
			ors = append(ors, and(terms...))
		}
		if ors != nil {
			out[r] = or(ors...)
		}
	}
	return out
}

// onlyOwned reports whether every column e reads belongs to a cluster relation (no correlated
// reference to an enclosing query).
func onlyOwned(e Expr, owner map[ColumnID]int) bool {
	used := map[ColumnID]bool{}
	ExprColumns(e, used)
	for id := range used {
		if _, ok := owner[id]; !ok {
			return false
		}
	}
	return true
}
