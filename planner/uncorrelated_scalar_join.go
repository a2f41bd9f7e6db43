package planner

// joinUncorrelatedScalars applies uncorrelatedScalarToJoin to the conjuncts of every filter of
// p, the comparison becoming the join's condition. It runs last, once the subquery plans were
// optimized on their own (their joins ordered, their columns pruned), which a plan joined in
// by a rule of the fixpoint would miss.
func joinUncorrelatedScalars(p Plan) Plan {
	out, _ := transformUp(p, func(p Plan) (Plan, bool) {
		f, ok := p.(*Filter)
		if !ok {
			return p, false
		}
		input := f.Input
		var keep []Expr
		for _, c := range conjuncts(f.Cond) {
			if j, on := uncorrelatedScalarToJoin(input, c); j != nil {
				j.On = on
				input = j
				continue
			}
			keep = append(keep, c)
		}
		if input == f.Input {
			return p, false
		}
		// The subqueries' values are not the filter's columns: project them away.
		return passThrough(wrapFilter(input, keep), f.Input.Schema()), true
	})
	return out
}

// uncorrelatedScalarToJoin rewrites a filter conjunct comparing a value of the filter's input
// with an uncorrelated scalar subquery that always yields exactly one row (projections over an
// aggregate without GROUP BY or HAVING) into a join with that subquery:
//
//	WHERE x > (SELECT avg(v) FROM s WHERE local)
//	→ input JOIN (SELECT avg(v) AS a FROM s WHERE local) ON x > a
//
// The subquery then is a plan like any other rather than an expression: over data nodes its
// aggregation divides among them (a subquery inside an expression runs in one process), and
// it still runs once (TPC-H Q11, Q15, Q22). It is exact because the one-row side makes the
// join keep each input row once, with the subquery's value beside it; a NULL value makes the
// comparison NULL, which drops the row as the filter did. The subquery must not produce a
// column of the input (a view read twice is bound twice, with new column IDs, so this only
// guards against a plan that shares them). It returns the joined plan and the condition that
// replaces cond over it, or nil.
func uncorrelatedScalarToJoin(input Plan, cond Expr) (*Join, Expr) {
	call, ok := cond.(*Call)
	if !ok || len(call.Args) != 2 || !scalarComparisons[call.Func] {
		return nil, nil
	}
	side := -1
	for i, a := range call.Args {
		if _, isSub := a.(*ScalarSubquery); isSub {
			side = i
		}
	}
	if side < 0 {
		return nil, nil
	}
	other := call.Args[1-side]
	outer := SchemaIDs(input.Schema())
	if HasSubquery(other) || !onlyFrom(other, outer) {
		return nil, nil
	}
	sub := call.Args[side].(*ScalarSubquery).Plan
	if len(FreeColumns(sub)) > 0 || len(sub.Schema()) != 1 || !alwaysOneRow(sub) {
		return nil, nil
	}
	for _, c := range sub.Schema() {
		if outer[c.ID] {
			return nil, nil
		}
	}
	value := sub.Schema()[0]
	columns := append(append(Schema{}, input.Schema()...), sub.Schema()...)
	join := &Join{Left: input, Right: sub, Kind: InnerJoin, Columns: columns}
	args := []Expr{other, other}
	args[side] = &ColumnRef{ID: value.ID, Name: value.Name, T: value.Type}
	return join, &Call{Func: call.Func, Args: args, T: call.T}
}

// alwaysOneRow reports whether p yields exactly one row whatever its input: projections over
// an aggregate without group keys.
func alwaysOneRow(p Plan) bool {
	for {
		switch n := p.(type) {
		case *Project:
			p = n.Input
		case *Aggregate:
			return len(n.GroupBy) == 0
		default:
			return false
		}
	}
}
