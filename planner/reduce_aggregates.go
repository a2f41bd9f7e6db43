package planner

import "context"

// ReduceGroupedJoins narrows the input of a grouped aggregate that is joined on one of its
// group keys with a selectively filtered scan: rows whose key that scan lacks are dropped by a
// semi join before they are grouped, instead of being grouped and then dropped by the join.
//
//	Join(… Aggregate(group k, in) …, … Scan s filtered …) ON k = b, where b equals s.c
//	→ Join(… Aggregate(group k, in ⋉ s ON k = s.c) …, …)
//
// It is exact: every row of the join has k equal to some value of s.c (b equals s.c in every row
// of the other side: through inner and semi join conditions, filters and projections of columns,
// not through outer joins or anti joins, and s is the same scan with the same filters), so a
// group whose key s lacks joins no row; and a group whose key s has keeps every row of its
// input, so its aggregates do not change. The join may be inner or semi (either side); a NULL
// key joins nothing either way.
//
// TPC-H's decorrelated scalar subqueries are the case: Q17 averages lineitem's quantity per
// part and joins the 200 parts of one brand and container; Q20 sums a year of lineitem per
// part and supplier and joins the partsupp rows of forest parts; Q2 takes the lowest supply
// cost per part and joins the parts of one size and type. The semi join hashes the few parts
// and the aggregate groups a few thousand rows instead of millions.
//
// PlanQuery applies it to plans executed in one process; over data nodes see
// ReduceGroupedJoinsOnNodes. The scan is planned twice (for the semi join and for the join above), so it applies only when
// the scan's estimated rows are well below the distinct keys the aggregate would group
// (reduceMaxShare).
func ReduceGroupedJoins(ctx context.Context, p Plan) Plan {
	return reduceGroupedJoins(ctx, p, 0)
}

// ReduceGroupedJoinsOnNodes is ReduceGroupedJoins for a plan distributed over nodes data nodes,
// where a semi join shuffling the aggregate's whole input by key would cost more than the
// aggregate, which shuffles only partial groups: it narrows only by a scan small enough for the
// semi join to broadcast it with a wide margin (see broadcastRight), so the input stays where
// it is read.
func ReduceGroupedJoinsOnNodes(ctx context.Context, p Plan, nodes int) Plan {
	return reduceGroupedJoins(ctx, p, max(nodes, 1))
}

// reduceBroadcastMargin is how many times the broadcast condition must hold for
// ReduceGroupedJoinsOnNodes: the semi join's input may be estimated below the aggregate's.
const reduceBroadcastMargin = 4

func reduceGroupedJoins(ctx context.Context, p Plan, nodes int) Plan {
	est := newPhysicalEstimator(ctx)
	out, _ := transformUp(p, func(n Plan) (Plan, bool) {
		j, ok := n.(*Join)
		if !ok || j.On == nil || (j.Kind != InnerJoin && j.Kind != SemiJoin) {
			return n, false
		}
		if left := reduceSide(est, j, j.Left, j.Right, nodes); left != nil {
			nj := *j
			nj.Left = left
			return &nj, true
		}
		if right := reduceSide(est, j, j.Right, j.Left, nodes); right != nil {
			nj := *j
			nj.Right = right
			return &nj, true
		}
		return n, false
	})
	return out
}

// reduceMaxShare bounds the scan's estimated rows, as a share of its table's rows (its filters
// must be selective) and of the distinct group keys (which bounds from the keys' value range
// can overstate), for the semi join to be worth its second scan and its probes.
const reduceMaxShare = 0.25

// reduceSide returns aggSide with the input of the aggregate it passes through narrowed by a
// semi join with a scan of other (see ReduceGroupedJoins), or nil when there is none worth it.
// With nodes > 0 the scan must be one to broadcast (ReduceGroupedJoinsOnNodes).
func reduceSide(est *estimator, j *Join, aggSide, other Plan, nodes int) Plan {
	type choice struct {
		agg  *Aggregate
		key  *ColumnRef // the group key, a column of agg.Input
		scan *Scan
		col  *ColumnRef // the column of scan equal to the joined column of other
		rows float64
	}
	var best *choice
	aggCols, otherCols := SchemaIDs(aggSide.Schema()), SchemaIDs(other.Schema())
	for _, c := range conjuncts(j.On) {
		a, b, ok := columnEquality(c)
		if !ok {
			continue
		}
		if !aggCols[a.ID] {
			a, b = b, a
		}
		if !aggCols[a.ID] || !otherCols[b.ID] {
			continue
		}
		agg, g := groupKeyOf(aggSide, a.ID)
		if agg == nil {
			continue
		}
		key, isRef := agg.GroupBy[g].(*ColumnRef)
		if !isRef {
			continue
		}
		keys := est.estimate(agg.Input).cols[key.ID].distinct
		for _, cand := range equalScans(other, b.ID) {
			rows := est.estimate(cand.scan).rows
			selective := rows <= reduceMaxShare*est.scanEstimate(cand.scan).rows // its filters keep few rows
			if !selective || rows > reduceMaxShare*keys || (best != nil && rows >= best.rows) {
				continue
			}
			if nodes > 0 && (rows > maxBroadcastRows || rows*float64(nodes*reduceBroadcastMargin) > est.estimate(agg.Input).rows) {
				continue
			}
			best = &choice{agg: agg, key: key, scan: cand.scan, col: cand.col, rows: rows}
		}
	}
	if best == nil {
		return nil
	}
	reducer := *best.scan // its own node; same columns, filters and table
	input, ok := wrapProducer(best.agg.Input, best.key.ID, func(p Plan, k *ColumnRef) Plan {
		return &Join{Left: p, Right: &reducer, Kind: SemiJoin, On: eq(k, best.col), Columns: p.Schema()}
	})
	if !ok {
		return nil
	}
	agg := *best.agg
	agg.Input = input
	return replacePlan(aggSide, best.agg, &agg)
}

// columnEquality recognizes a = b between two columns.
func columnEquality(e Expr) (*ColumnRef, *ColumnRef, bool) {
	call, ok := e.(*Call)
	if !ok || call.Func != "=" || len(call.Args) != 2 {
		return nil, nil, false
	}
	a, ok1 := call.Args[0].(*ColumnRef)
	b, ok2 := call.Args[1].(*ColumnRef)
	return a, b, ok1 && ok2
}

// groupKeyOf follows column id of p's output down through filters and projections of columns
// to an aggregate's group key: it returns the aggregate and the key's index, or nil.
func groupKeyOf(p Plan, id ColumnID) (*Aggregate, int) {
	for {
		switch n := p.(type) {
		case *Filter:
			p = n.Input
		case *Project:
			at := Schema(n.Columns).IndexOf(id)
			if at < 0 {
				return nil, 0
			}
			ref, ok := n.Exprs[at].(*ColumnRef)
			if !ok {
				return nil, 0
			}
			id, p = ref.ID, n.Input
		case *Aggregate:
			for i := range n.GroupBy {
				if n.Columns[i].ID == id {
					return n, i
				}
			}
			return nil, 0
		default:
			return nil, 0
		}
	}
}

// scanColumnRef is a column of a scan.
type scanColumnRef struct {
	scan *Scan
	col  *ColumnRef
}

// equalScans returns the scans under p with a column whose value equals column id's in every
// row of p: the column itself where a scan produces it, and the columns equalities make equal
// to it, following inner joins (both sides), semi joins (both sides: a kept left row equals some
// right row), filters and projections of columns.
func equalScans(p Plan, id ColumnID) []scanColumnRef {
	class := map[ColumnID]bool{id: true}
	var eqs [][2]*ColumnRef
	var scans []*Scan
	var walk func(Plan)
	walk = func(p Plan) {
		switch n := p.(type) {
		case *Scan:
			scans = append(scans, n)
		case *Filter:
			eqs = appendEqualities(eqs, n.Cond)
			walk(n.Input)
		case *Project:
			for i, e := range n.Exprs {
				if ref, ok := e.(*ColumnRef); ok {
					eqs = append(eqs, [2]*ColumnRef{{ID: n.Columns[i].ID}, ref})
				}
			}
			walk(n.Input)
		case *Join:
			if n.Kind != InnerJoin && n.Kind != CrossJoin && n.Kind != SemiJoin {
				return
			}
			if n.On != nil {
				eqs = appendEqualities(eqs, n.On)
			}
			walk(n.Left)
			walk(n.Right)
		}
	}
	walk(p)
	for changed := true; changed; {
		changed = false
		for _, e := range eqs {
			if class[e[0].ID] != class[e[1].ID] {
				class[e[0].ID], class[e[1].ID] = true, true
				changed = true
			}
		}
	}
	var out []scanColumnRef
	for _, s := range scans {
		for _, c := range s.Columns {
			if class[c.ID] {
				out = append(out, scanColumnRef{scan: s, col: &ColumnRef{ID: c.ID, Name: c.Name, T: c.Type}})
				break
			}
		}
	}
	return out
}

func appendEqualities(eqs [][2]*ColumnRef, cond Expr) [][2]*ColumnRef {
	for _, c := range conjuncts(cond) {
		if a, b, ok := columnEquality(c); ok {
			eqs = append(eqs, [2]*ColumnRef{a, b})
		}
	}
	return eqs
}

// wrapProducer returns p with wrap applied to the node below it that produces column id (the
// column reached through filters, projections of columns and the sides of joins that output
// it), passing the column as that node outputs it; false when id is not found.
func wrapProducer(p Plan, id ColumnID, wrap func(Plan, *ColumnRef) Plan) (Plan, bool) {
	at := p.Schema().IndexOf(id)
	if at < 0 {
		return nil, false
	}
	here := func() (Plan, bool) {
		c := p.Schema()[at]
		return wrap(p, &ColumnRef{ID: c.ID, Name: c.Name, T: c.Type}), true
	}
	var child Plan
	var childID ColumnID
	switch n := p.(type) {
	case *Filter:
		child, childID = n.Input, id
	case *Project:
		ref, ok := n.Exprs[at].(*ColumnRef)
		if !ok {
			return here()
		}
		child, childID = n.Input, ref.ID
	case *Join:
		switch {
		case n.Kind == LeftJoin && SchemaIDs(n.Right.Schema())[id]:
			return here() // NULL-extended: not the right side's values
		case SchemaIDs(n.Left.Schema())[id]:
			child = n.Left
		default:
			child = n.Right
		}
		childID = id
	default:
		return here()
	}
	wrapped, ok := wrapProducer(child, childID, wrap)
	if !ok {
		return here()
	}
	return replacePlan(p, child, wrapped), true
}
