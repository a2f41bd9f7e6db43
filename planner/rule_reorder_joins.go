package planner

import (
	"context"
	"slices"
)

// ReorderJoins rewrites a cluster of relations joined by inner and cross joins (FROM a, b, c
// WHERE …, or chains of JOIN … ON) into the join order its cost model estimates cheapest (see
// join_order.go): relations are estimated from their tables' statistics
// (catalog.StatisticsTable) after their own conditions, equality conditions join them, and
// every hash join builds on the side estimated smaller. Written order would otherwise decide
// the plan: a query listing twenty tables whose neighbours in the FROM clause share no condition
// builds a cross product of all of them before any condition applies, and TPC-H's Q5 joins
// customers with suppliers of the same nation before the orders that would have narrowed them.
// Every condition is attached at the first join where all the relations it reads are present,
// and conditions over one relation filter that relation directly, as do the filters an OR over
// several relations implies for each (impliedFilters). Two joined relations are left to
// PushFilters unless the right one is estimated larger (they are swapped) or filters are
// implied.
//
// It runs once, before the rewrite rules, and keeps the cluster's output column order (adding a
// projection when the join order changed it). Conditions holding subqueries stay above the
// joins, where they were.
type ReorderJoins struct {
	// Ctx bounds the reading of table statistics; nil means context.Background().
	Ctx context.Context
	// decorrelated limits the rewrite to the clusters that a decorrelated scalar subquery joined
	// (a relation that is a grouped Aggregate, under projections): OptimizeContext runs it once
	// more after Decorrelate, which adds those joins after the first ordering.
	decorrelated bool
}

func (ReorderJoins) Name() string { return "reorder_joins" }

func (r ReorderJoins) Rewrite(p Plan) (Plan, bool) {
	est := newEstimator(r.Ctx)
	changed := false
	var visit, visitKept func(Plan) Plan
	visit = func(p Plan) Plan {
		var rels []Plan
		var conds []Expr
		if collectJoinCluster(p, &rels, &conds) {
			if r.decorrelated && !slices.ContainsFunc(rels, isGroupedAggregate) {
				return visitKept(p)
			}
			if len(rels) == 2 && !pairNeedsReorder(est, rels, conds) {
				return visitKept(p)
			}
			for i, rel := range rels {
				if r.decorrelated && isGroupedAggregate(rel) {
					// A decorrelated subquery's body: its joins were inside an expression when
					// the first pass ran, so they were never ordered.
					rels[i], _ = ReorderJoins{Ctx: r.Ctx}.Rewrite(rel)
					continue
				}
				rels[i] = visit(rel)
			}
			changed = true
			return orderJoins(est, p.Schema(), rels, conds)
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
	// visitKept rebuilds a cluster left in its order with its relations visited: its inner joins
	// are no clusters of their own (without the filters above them they would be estimated
	// wrongly).
	visitKept = func(p Plan) Plan {
		kids := p.Children()
		out := make([]Plan, len(kids))
		for i, k := range kids {
			if isClusterNode(k) {
				out[i] = visitKept(k)
			} else {
				out[i] = visit(k)
			}
		}
		return withChildren(p, out)
	}
	out := visit(p)
	return out, changed
}

// isGroupedAggregate reports whether p is an Aggregate with GROUP BY keys, under projections.
func isGroupedAggregate(p Plan) bool {
	for {
		switch n := p.(type) {
		case *Project:
			p = n.Input
		case *Aggregate:
			return len(n.GroupBy) > 0
		default:
			return false
		}
	}
}

// isClusterNode reports whether collectJoinCluster takes p as part of a cluster (rather than as
// one of its relations).
func isClusterNode(p Plan) bool {
	switch n := p.(type) {
	case *Filter:
		return isInnerJoinTree(n.Input)
	case *Join:
		return n.Kind == InnerJoin || n.Kind == CrossJoin
	}
	return false
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

// clusterConds sorts a cluster's conditions (after factoring what the branches of ORs share,
// see factorDisjunctions): those to keep above the joins (subqueries, or no relation read),
// those over one relation (local, by relation, with the filters impliedFilters derives) and
// those over several (multi, with the relations each reads and the filters derived from it).
func clusterConds(rels []Plan, conds []Expr) (c clusterSplit) {
	c.owner = map[ColumnID]int{}
	for i, rel := range rels {
		for _, col := range rel.Schema() {
			c.owner[col.ID] = i
		}
	}
	conds, _ = factorDisjunctions(conds)
	c.local = make([][]Expr, len(rels))
	for _, e := range conds {
		set := relsReadBy(e, c.owner)
		switch {
		case HasSubquery(e) || len(set) == 0:
			c.top = append(c.top, e)
		case len(set) == 1:
			for i := range set {
				c.local[i] = append(c.local[i], e)
			}
		default:
			implied := impliedFilters(e, c.owner)
			for i := range rels {
				if f, ok := implied[i]; ok {
					c.local[i] = append(c.local[i], f)
				}
			}
			c.multi = append(c.multi, e)
			c.multiRels = append(c.multiRels, set)
			c.implied = append(c.implied, implied)
		}
	}
	return c
}

// clusterSplit is a cluster's conditions sorted by clusterConds.
type clusterSplit struct {
	owner     map[ColumnID]int // column → relation
	top       []Expr
	local     [][]Expr
	multi     []Expr
	multiRels []map[int]bool
	implied   []map[int]Expr // the filters derived from each of multi, by relation
}

// pairNeedsReorder reports whether a cluster of two relations is better rebuilt than left to
// PushFilters: when the right one is estimated larger than the left one (after their own
// conditions), so that the join should build on the left, or when a condition over both
// implies filters on either.
func pairNeedsReorder(est *estimator, rels []Plan, conds []Expr) bool {
	c := clusterConds(rels, conds)
	for _, m := range c.implied {
		if len(m) > 0 {
			return true
		}
	}
	return est.estimate(wrapFilter(rels[1], c.local[1])).rows > est.estimate(wrapFilter(rels[0], c.local[0])).rows
}

// orderJoins builds the cost-based join of rels with conds; the result has schema's column
// order.
func orderJoins(est *estimator, schema Schema, rels []Plan, conds []Expr) Plan {
	c := clusterConds(rels, conds)
	g := newJoinGraph(est, rels, c)
	plan := g.build(g.order(), make([]bool, len(g.conds)))
	plan = wrapFilter(plan, c.top)
	return withColumnOrder(plan, schema)
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
