package planner

import "math"

// ReorderJoins rewrites a cluster of three or more relations joined by inner and cross joins
// (FROM a, b, c WHERE …, or chains of JOIN … ON) into a left-deep join order chosen greedily:
// start from the relation estimated smallest after its own filters, then keep adding the
// smallest relation connected to the joined set by an equality condition, and only when none is
// connected the smallest remaining one (a cross join). Every condition is attached at the first
// join where all the relations it reads are present, and conditions over one relation filter
// that relation directly. Written order would otherwise decide the plan: a query listing twenty
// tables whose neighbours in the FROM clause share no condition builds a cross product of all of
// them before any condition applies.
//
// It runs once, before the rewrite rules, and keeps the cluster's output column order (adding a
// projection when the join order changed it). Conditions holding subqueries stay above the
// joins, where they were.
type ReorderJoins struct{}

func (ReorderJoins) Name() string { return "reorder_joins" }

func (r ReorderJoins) Rewrite(p Plan) (Plan, bool) {
	changed := false
	var visit func(Plan) Plan
	visit = func(p Plan) Plan {
		var rels []Plan
		var conds []Expr
		if collectJoinCluster(p, &rels, &conds) && len(rels) >= 3 {
			for i, rel := range rels {
				rels[i] = visit(rel)
			}
			changed = true
			return orderJoins(p.Schema(), rels, conds)
		}
		kids := p.Children()
		if len(kids) == 0 {
			return p
		}
		out := make([]Plan, len(kids))
		for i, k := range kids {
			out[i] = visit(k)
		}
		return withChildren(p, out)
	}
	out := visit(p)
	return out, changed
}

// collectJoinCluster flattens filters and inner/cross joins rooted at p into relations and
// conjuncts. It reports false when p is not a join (or a filter over one).
func collectJoinCluster(p Plan, rels *[]Plan, conds *[]Expr) bool {
	switch n := p.(type) {
	case *Filter:
		if !isInnerJoinTree(n.Input) {
			return false
		}
		*conds = append(*conds, conjuncts(n.Cond)...)
		return collectJoinCluster(n.Input, rels, conds)
	case *Join:
		if n.Kind != InnerJoin && n.Kind != CrossJoin {
			return false
		}
		if n.On != nil {
			*conds = append(*conds, conjuncts(n.On)...)
		}
		for _, side := range []Plan{n.Left, n.Right} {
			if !collectJoinCluster(side, rels, conds) {
				*rels = append(*rels, side)
			}
		}
		return true
	}
	return false
}

func isInnerJoinTree(p Plan) bool {
	switch n := p.(type) {
	case *Filter:
		return isInnerJoinTree(n.Input)
	case *Join:
		return n.Kind == InnerJoin || n.Kind == CrossJoin
	}
	return false
}

// orderJoins builds the greedy left-deep join of rels with conds; the result has schema's
// column order.
func orderJoins(schema Schema, rels []Plan, conds []Expr) Plan {
	owner := map[ColumnID]int{}
	for i, rel := range rels {
		for _, c := range rel.Schema() {
			owner[c.ID] = i
		}
	}
	// relsOf is the set of relations a condition reads (outer references read none).
	relsOf := func(e Expr) map[int]bool {
		used := map[ColumnID]bool{}
		ExprColumns(e, used)
		set := map[int]bool{}
		for id := range used {
			if i, ok := owner[id]; ok {
				set[i] = true
			}
		}
		return set
	}
	var top, multi []Expr
	var multiRels []map[int]bool
	local := make([][]Expr, len(rels))
	for _, c := range conds {
		set := relsOf(c)
		switch {
		case HasSubquery(c) || len(set) == 0:
			top = append(top, c)
		case len(set) == 1:
			for i := range set {
				local[i] = append(local[i], c)
			}
		default:
			multi = append(multi, c)
			multiRels = append(multiRels, set)
		}
	}
	est := make([]float64, len(rels))
	for i := range rels {
		rels[i] = wrapFilter(rels[i], local[i])
		est[i] = estimateRows(rels[i])
	}
	// connected reports whether an equality condition links relation i to the joined set.
	connected := func(i int, joined map[int]bool) bool {
		for k, c := range multi {
			call, ok := c.(*Call)
			if !ok || call.Func != "=" || !multiRels[k][i] {
				continue
			}
			for j := range multiRels[k] {
				if j != i && joined[j] {
					return true
				}
			}
		}
		return false
	}
	order := make([]int, 0, len(rels))
	joined := map[int]bool{}
	for len(order) < len(rels) {
		best, bestConnected := -1, false
		for i := range rels {
			if joined[i] {
				continue
			}
			c := len(order) > 0 && connected(i, joined)
			if best < 0 || (c && !bestConnected) || (c == bestConnected && est[i] < est[best]) {
				best, bestConnected = i, c
			}
		}
		order = append(order, best)
		joined[best] = true
	}
	placed := make([]bool, len(multi))
	plan := rels[order[0]]
	present := map[int]bool{order[0]: true}
	for _, i := range order[1:] {
		present[i] = true
		var on []Expr
		for k, c := range multi {
			if placed[k] || !subset(multiRels[k], present) {
				continue
			}
			placed[k] = true
			on = append(on, c)
		}
		j := &Join{Left: plan, Right: rels[i], Kind: CrossJoin, Columns: append(append(Schema{}, plan.Schema()...), rels[i].Schema()...)}
		if len(on) > 0 {
			j.Kind, j.On = InnerJoin, and(on...)
		}
		plan = j
	}
	plan = wrapFilter(plan, top)
	return withColumnOrder(plan, schema)
}

func subset(a, b map[int]bool) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// withColumnOrder returns p, projected to the column order of want when its own differs.
func withColumnOrder(p Plan, want Schema) Plan {
	have := p.Schema()
	same := len(have) == len(want)
	for i := 0; same && i < len(want); i++ {
		same = have[i].ID == want[i].ID
	}
	if same {
		return p
	}
	proj := &Project{Input: p}
	for _, c := range want {
		proj.Exprs = append(proj.Exprs, &ColumnRef{ID: c.ID, Name: c.Name, T: c.Type})
		proj.Columns = append(proj.Columns, c)
	}
	return proj
}

// estimateRows is a rough row count used to order joins: a table's row count when its source
// knows it, shrunk by each filter (an equality with a constant keeps a tenth, anything else
// half).
func estimateRows(p Plan) float64 {
	switch n := p.(type) {
	case *Scan:
		if c, ok := n.Table.(interface{ NumRows() int64 }); ok {
			return math.Max(float64(c.NumRows()), 1)
		}
		return 1000
	case *Filter:
		rows := estimateRows(n.Input)
		for _, c := range conjuncts(n.Cond) {
			if call, ok := c.(*Call); ok && call.Func == "=" && len(call.Args) == 2 && (isConstant(call.Args[0]) || isConstant(call.Args[1])) {
				rows *= 0.1
			} else {
				rows *= 0.5
			}
		}
		return math.Max(rows, 1)
	case *Values:
		return float64(len(n.Rows))
	case *Limit:
		if n.Count >= 0 {
			return math.Min(float64(n.Count), estimateRows(n.Input))
		}
	}
	kids := p.Children()
	if len(kids) == 0 {
		return 1000
	}
	rows := 1.0
	for _, k := range kids {
		rows = math.Max(rows, estimateRows(k))
	}
	return rows
}
