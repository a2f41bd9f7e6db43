package planner

// PushFilters moves filter conditions as close to the data as they can go: through
// projections, into the inputs of joins (turning a filtered cross join into an inner join the
// physical planner can hash), and into scans. Conditions holding subqueries move only where
// they need no rewriting.
type PushFilters struct{}

func (PushFilters) Name() string { return "push_filters" }

func (r PushFilters) Rewrite(p Plan) (Plan, bool) {
	return transformUp(p, r.pushNode)
}

func (r PushFilters) pushNode(p Plan) (Plan, bool) {
	switch p := p.(type) {
	case *Filter:
		return r.pushFilter(p)
	case *Join:
		return r.pushJoinCondition(p)
	}
	return p, false
}

func (r PushFilters) pushFilter(f *Filter) (Plan, bool) {
	conds := conjuncts(f.Cond)
	if factored, ok := factorDisjunctions(conds); ok {
		return &Filter{Input: f.Input, Cond: and(factored...)}, true
	}
	switch in := f.Input.(type) {
	case *Filter:
		return &Filter{Input: in.Input, Cond: and(append(conjuncts(in.Cond), conds...)...)}, true
	case *Scan:
		if in.Limit > 0 {
			return f, false
		}
		var keep []Expr
		scan := *in
		scan.Filters = append([]Expr(nil), in.Filters...)
		for _, c := range conds {
			if HasSubquery(c) {
				keep = append(keep, c)
				continue
			}
			scan.Filters = append(scan.Filters, c)
		}
		if len(scan.Filters) == len(in.Filters) {
			return f, false
		}
		return wrapFilter(&scan, keep), true
	case *Project:
		repl := map[ColumnID]Expr{}
		for i, e := range in.Exprs {
			if !HasSubquery(e) {
				repl[in.Columns[i].ID] = e
			}
		}
		var keep, push []Expr
		for _, c := range conds {
			used := map[ColumnID]bool{}
			ExprColumns(c, used)
			ok := !HasSubquery(c)
			for id := range used {
				if _, found := repl[id]; !found && Schema(in.Columns).IndexOf(id) >= 0 {
					ok = false
				}
			}
			if ok {
				push = append(push, substitute(c, repl))
			} else {
				keep = append(keep, c)
			}
		}
		if len(push) == 0 {
			return f, false
		}
		proj := *in
		proj.Input = &Filter{Input: in.Input, Cond: and(push...)}
		return wrapFilter(&proj, keep), true
	case *Join:
		return r.pushIntoJoin(in, conds, f)
	case *Sort:
		return &Sort{Input: &Filter{Input: in.Input, Cond: f.Cond}, Keys: in.Keys}, true
	}
	return f, false
}

// pushIntoJoin distributes a WHERE condition over a join.
func (r PushFilters) pushIntoJoin(j *Join, conds []Expr, f *Filter) (Plan, bool) {
	left, right := SchemaIDs(j.Left.Schema()), SchemaIDs(j.Right.Schema())
	var toLeft, toRight, toOn, keep []Expr
	for _, c := range conds {
		switch {
		case onlyFrom(c, left):
			toLeft = append(toLeft, c)
		case (j.Kind == InnerJoin || j.Kind == CrossJoin) && onlyFrom(c, right):
			toRight = append(toRight, c)
		case (j.Kind == InnerJoin || j.Kind == CrossJoin) && !HasSubquery(c) && onlyFrom(c, union(left, right)):
			toOn = append(toOn, c)
		default:
			keep = append(keep, c)
		}
	}
	if len(toLeft)+len(toRight)+len(toOn) == 0 {
		return f, false
	}
	nj := *j
	if len(toLeft) > 0 {
		nj.Left = &Filter{Input: j.Left, Cond: and(toLeft...)}
	}
	if len(toRight) > 0 {
		nj.Right = &Filter{Input: j.Right, Cond: and(toRight...)}
	}
	if len(toOn) > 0 {
		if j.On != nil {
			toOn = append(conjuncts(j.On), toOn...)
		}
		nj.On = and(toOn...)
		nj.Kind = InnerJoin
	}
	return wrapFilter(&nj, keep), true
}

// pushJoinCondition moves conjuncts of an inner join's ON that read one side only into that
// side, and for left, semi and anti joins those that read the right side only into the right.
func (r PushFilters) pushJoinCondition(j *Join) (Plan, bool) {
	if j.On == nil || j.Kind == NullAwareAntiJoin {
		return j, false
	}
	if factored, ok := factorDisjunctions(conjuncts(j.On)); ok {
		nj := *j
		nj.On = and(factored...)
		return &nj, true
	}
	left, right := SchemaIDs(j.Left.Schema()), SchemaIDs(j.Right.Schema())
	var toLeft, toRight, keep []Expr
	for _, c := range conjuncts(j.On) {
		switch {
		case HasSubquery(c) || isConstant(c):
			keep = append(keep, c)
		case j.Kind == InnerJoin && onlyFrom(c, left):
			toLeft = append(toLeft, c)
		case onlyFrom(c, right):
			toRight = append(toRight, c)
		default:
			keep = append(keep, c)
		}
	}
	if len(toLeft)+len(toRight) == 0 {
		return j, false
	}
	nj := *j
	if len(toLeft) > 0 {
		nj.Left = &Filter{Input: j.Left, Cond: and(toLeft...)}
	}
	if len(toRight) > 0 {
		nj.Right = &Filter{Input: j.Right, Cond: and(toRight...)}
	}
	nj.On = and(keep...)
	if nj.On == nil && nj.Kind == InnerJoin {
		nj.Kind = CrossJoin
	}
	if nj.On == nil && nj.Kind != CrossJoin {
		nj.On = trueLiteral()
	}
	return &nj, true
}

func wrapFilter(p Plan, conds []Expr) Plan {
	if len(conds) == 0 {
		return p
	}
	return &Filter{Input: p, Cond: and(conds...)}
}

func union(a, b map[ColumnID]bool) map[ColumnID]bool {
	m := make(map[ColumnID]bool, len(a)+len(b))
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}
