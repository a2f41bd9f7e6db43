package planner

// scalarToJoin rewrites a filter conjunct comparing an outer value with a correlated scalar
// aggregate subquery into a join with that aggregate grouped by its correlation keys:
//
//	WHERE x < (SELECT 0.2 * avg(v) FROM s WHERE s.k = outer.k AND local)
//	→ input JOIN (SELECT k, 0.2 * avg(v) AS a FROM s WHERE local GROUP BY k) ON s.k = outer.k
//	  WHERE x < a
//
// so the subquery runs once instead of once per outer row (TPC-H Q2, Q17, Q20). It is exact
// because an outer row with no matching group is one whose subquery aggregates no row: its
// value is NULL (only sum, avg, min and max qualify, never count, and the value may only be
// arithmetic over them), so the comparison is NULL and the filter drops the row, as the inner
// join does. It applies only when every correlated conjunct is an equality between an outer
// expression and a column of the subquery's input, the aggregate has no GROUP BY or HAVING, and
// the subquery is otherwise uncorrelated. It returns the joined plan and the condition that
// replaces cond over it, or nil.
func scalarToJoin(input Plan, cond Expr) (Plan, Expr) {
	call, ok := cond.(*Call)
	if !ok || len(call.Args) != 2 || !scalarComparisons[call.Func] {
		return nil, nil
	}
	outer := SchemaIDs(input.Schema())
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
	if HasSubquery(other) || !onlyFrom(other, outer) {
		return nil, nil
	}
	sub := call.Args[side].(*ScalarSubquery).Plan
	if len(FreeColumns(sub)) == 0 || len(sub.Schema()) != 1 {
		return nil, nil // uncorrelated: computed once already
	}
	// Project* over the aggregate; each projection arithmetic over what is below it.
	var projects []*Project
	p := sub
	for {
		pr, isProject := p.(*Project)
		if !isProject {
			break
		}
		below := SchemaIDs(pr.Input.Schema())
		for _, e := range pr.Exprs {
			if !nullPropagating(e) || !onlyFrom(e, below) {
				return nil, nil
			}
		}
		projects = append(projects, pr)
		p = pr.Input
	}
	agg, isAgg := p.(*Aggregate)
	if !isAgg || len(agg.GroupBy) > 0 || len(projects) == 0 {
		return nil, nil
	}
	aggIn := SchemaIDs(agg.Input.Schema())
	for _, a := range agg.Aggs {
		if !nullOnEmpty[a.Func] {
			return nil, nil
		}
		for _, arg := range a.Args {
			if HasSubquery(arg) || !onlyFrom(arg, aggIn) {
				return nil, nil
			}
		}
	}
	body, corr, ok := splitCorrelated(agg.Input, outer)
	if !ok || len(corr) == 0 {
		return nil, nil
	}
	inner := SchemaIDs(body.Schema())
	var keys []Expr
	var keyCols []Column
	seen := map[ColumnID]bool{}
	for _, c := range corr {
		eq, isCall := c.(*Call)
		if !isCall || eq.Func != "=" || len(eq.Args) != 2 {
			return nil, nil
		}
		var key *ColumnRef
		for i, a := range eq.Args {
			if ref, isRef := a.(*ColumnRef); isRef && inner[ref.ID] && !outer[ref.ID] && onlyFrom(eq.Args[1-i], outer) {
				key = ref
			}
		}
		if key == nil {
			return nil, nil
		}
		if !seen[key.ID] {
			seen[key.ID] = true
			keys = append(keys, key)
			at := body.Schema().IndexOf(key.ID)
			keyCols = append(keyCols, body.Schema()[at])
		}
	}
	// The group keys keep their input columns' IDs: nothing else reads those columns.
	grouped := &Aggregate{Input: body, GroupBy: keys, Aggs: agg.Aggs, Columns: append(append([]Column(nil), keyCols...), agg.Columns...)}
	var right Plan = grouped
	for i := len(projects) - 1; i >= 0; i-- {
		pr := *projects[i]
		pr.Input = right
		pr.Exprs = append([]Expr(nil), pr.Exprs...)
		pr.Columns = append([]Column(nil), pr.Columns...)
		for _, k := range keyCols {
			pr.Exprs = append(pr.Exprs, &ColumnRef{ID: k.ID, Name: k.Name, T: k.Type})
			pr.Columns = append(pr.Columns, k)
		}
		right = &pr
	}
	value := sub.Schema()[0]
	columns := append(append(Schema{}, input.Schema()...), right.Schema()...)
	join := &Join{Left: input, Right: right, Kind: InnerJoin, On: and(corr...), Columns: columns}
	args := []Expr{other, other}
	args[side] = &ColumnRef{ID: value.ID, Name: value.Name, T: value.Type}
	return join, &Call{Func: call.Func, Args: args, T: call.T}
}

var scalarComparisons = map[string]bool{"=": true, "<>": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true}

// nullOnEmpty are the aggregates whose value over no row is NULL.
var nullOnEmpty = map[string]bool{"sum": true, "avg": true, "min": true, "max": true}

// nullPropagating reports whether e is NULL whenever a column it reads is: column references,
// literals, casts and arithmetic, and it reads at least one column.
func nullPropagating(e Expr) bool {
	used := map[ColumnID]bool{}
	ExprColumns(e, used)
	if len(used) == 0 {
		return false
	}
	var ok func(Expr) bool
	ok = func(e Expr) bool {
		switch e := e.(type) {
		case *ColumnRef, *Literal:
			return true
		case *Cast:
			return ok(e.Expr)
		case *Call:
			if !arithmeticOps[e.Func] {
				return false
			}
			for _, a := range e.Args {
				if !ok(a) {
					return false
				}
			}
			return true
		}
		return false
	}
	return ok(e)
}

var arithmeticOps = map[string]bool{"+": true, "-": true, "*": true, "/": true}
