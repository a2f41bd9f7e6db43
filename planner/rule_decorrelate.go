package planner

import "github.com/apache/arrow-go/v18/arrow"

// Decorrelate rewrites subqueries that are top-level conjuncts of a filter into joins, so they
// run once instead of once per row:
//
//	WHERE EXISTS (SELECT … FROM s WHERE corr AND local)      → semi join on corr
//	WHERE NOT EXISTS (…)                                     → anti join on corr
//	WHERE x IN (SELECT y FROM s WHERE corr AND local)        → semi join on x = y AND corr
//	WHERE x NOT IN (SELECT y FROM s)  (uncorrelated)         → null-aware anti join on x = y
//
// In a filter, a NULL condition drops the row just as FALSE does, which is what makes these
// rewrites exact. A subquery qualifies only when its plan is projections over an optional
// filter over an uncorrelated input, and its correlated references all point at the filter's
// own input; anything else (aggregates, limits, deeper correlation) stays a per-row subquery.
type Decorrelate struct{}

func (Decorrelate) Name() string { return "decorrelate" }

func (d Decorrelate) Rewrite(p Plan) (Plan, bool) {
	return transformUp(p, func(p Plan) (Plan, bool) {
		f, ok := p.(*Filter)
		if !ok {
			return p, false
		}
		input := f.Input
		var keep []Expr
		changed, widened := false, false
		for _, c := range conjuncts(f.Cond) {
			if j := d.toJoin(input, c); j != nil {
				input, changed = j, true
				continue
			}
			if j, replaced := scalarToJoin(input, c); j != nil {
				input, changed, widened = j, true, true
				keep = append(keep, replaced)
				continue
			}
			keep = append(keep, c)
		}
		if !changed {
			return p, false
		}
		out := wrapFilter(input, keep)
		if widened {
			// The joined aggregates are not the filter's columns: project them away.
			out = passThrough(out, f.Input.Schema())
		}
		return out, true
	})
}

// toJoin returns input joined with the subquery of cond, or nil if cond does not qualify.
func (d Decorrelate) toJoin(input Plan, cond Expr) Plan {
	outer := SchemaIDs(input.Schema())
	// NOT EXISTS (…) and NOT (x IN (…)) arrive as not(…) around the subquery; under three-valued
	// logic they are exactly the negated forms.
	if call, ok := cond.(*Call); ok && call.Func == "not" && len(call.Args) == 1 {
		switch inner := call.Args[0].(type) {
		case *Exists:
			cond = &Exists{Plan: inner.Plan, Negated: !inner.Negated}
		case *InSubquery:
			cond = &InSubquery{Expr: inner.Expr, Plan: inner.Plan, Negated: !inner.Negated}
		}
	}
	switch c := cond.(type) {
	case *Exists:
		body, corr, ok := splitCorrelated(c.Plan, outer)
		if !ok {
			return nil
		}
		kind := SemiJoin
		if c.Negated {
			kind = AntiJoin
		}
		return &Join{Left: input, Right: body, Kind: kind, On: orTrue(and(corr...)), Columns: input.Schema()}
	case *InSubquery:
		if HasSubquery(c.Expr) || !onlyFrom(c.Expr, outer) {
			return nil
		}
		body, corr, ok := splitCorrelated(c.Plan, outer)
		if !ok || len(body.Schema()) == 0 {
			return nil
		}
		col := c.Plan.Schema()[0]
		if body.Schema().IndexOf(col.ID) < 0 {
			return nil
		}
		eq := &Call{Func: "=", Args: []Expr{c.Expr, &ColumnRef{ID: col.ID, Name: col.Name, T: col.Type}}, T: arrow.FixedWidthTypes.Boolean}
		if c.Negated {
			// The null-aware anti join hashes on the compared value: a constant left side
			// (7 NOT IN (…)) gives it no key, so that form stays an uncorrelated subquery.
			if len(corr) > 0 || isConstant(c.Expr) {
				return nil
			}
			return &Join{Left: input, Right: body, Kind: NullAwareAntiJoin, On: eq, Columns: input.Schema()}
		}
		return &Join{Left: input, Right: body, Kind: SemiJoin, On: and(append([]Expr{eq}, corr...)...), Columns: input.Schema()}
	}
	return nil
}

// splitCorrelated takes a subquery plan of the form Project* → [Filter] → uncorrelated input
// and returns the plan without its correlated conjuncts, and those conjuncts. ok is false when
// the plan has another shape or refers to columns that are neither its own nor in outer.
func splitCorrelated(p Plan, outer map[ColumnID]bool) (body Plan, corr []Expr, ok bool) {
	free := FreeColumns(p)
	for id := range free {
		if !outer[id] {
			return nil, nil, false
		}
	}
	// Peel projections: they only rename or compute the value the IN compares, and must be
	// uncorrelated themselves.
	var projects []*Project
	for {
		pr, isProject := p.(*Project)
		if !isProject {
			break
		}
		for _, e := range pr.Exprs {
			if HasSubquery(e) || !onlyFrom(e, SchemaIDs(pr.Input.Schema())) {
				return nil, nil, false
			}
		}
		projects = append(projects, pr)
		p = pr.Input
	}
	var local []Expr
	if f, isFilter := p.(*Filter); isFilter {
		inner := SchemaIDs(f.Input.Schema())
		for _, c := range conjuncts(f.Cond) {
			used := map[ColumnID]bool{}
			ExprColumns(c, used)
			correlated := false
			for id := range used {
				if outer[id] && !inner[id] {
					correlated = true
				}
			}
			switch {
			case !correlated:
				local = append(local, c)
			case HasSubquery(c):
				return nil, nil, false
			default:
				corr = append(corr, c)
			}
		}
		p = f.Input
	}
	if len(FreeColumns(p)) > 0 {
		return nil, nil, false
	}
	body = wrapFilter(p, local)
	for i := len(projects) - 1; i >= 0; i-- {
		pr := *projects[i]
		pr.Input = body
		// Correlated conditions may read columns the projection drops: keep the input's
		// columns visible by projecting them through.
		for _, c := range body.Schema() {
			if Schema(pr.Columns).IndexOf(c.ID) < 0 {
				pr.Exprs = append(pr.Exprs, &ColumnRef{ID: c.ID, Name: c.Name, T: c.Type})
				pr.Columns = append(pr.Columns, c)
			}
		}
		body = &pr
	}
	return body, corr, true
}

// passThrough projects p onto the columns of schema (all of which p has), keeping their IDs.
func passThrough(p Plan, schema Schema) Plan {
	exprs := make([]Expr, len(schema))
	for i, c := range schema {
		exprs[i] = &ColumnRef{ID: c.ID, Name: c.Name, T: c.Type}
	}
	return &Project{Input: p, Exprs: exprs, Columns: append(Schema(nil), schema...)}
}

func orTrue(e Expr) Expr {
	if e == nil {
		return trueLiteral()
	}
	return e
}
