package planner

// pruneColumns removes the columns no ancestor reads: scans read fewer columns, projections
// compute fewer expressions and unused aggregates are dropped. The root keeps its whole
// schema. It runs once, after the rewrite rules reach their fixpoint, because it changes
// schemas that rules may otherwise still be matching against.
func pruneColumns(p Plan) Plan {
	return prune(p, SchemaIDs(p.Schema()))
}

func prune(p Plan, required map[ColumnID]bool) Plan {
	switch p := p.(type) {
	case *Scan:
		// Columns only the filters read are read, filtered on and dropped by the scan itself:
		// a filtered batch need not carry them.
		byFilter := map[ColumnID]bool{}
		for _, f := range p.Filters {
			ExprColumns(f, byFilter)
		}
		cols, idx := p.readColumns()
		s := *p
		s.Columns, s.Indices, s.FilterColumns, s.FilterIndices = nil, nil, nil, nil
		for i, c := range cols {
			switch {
			case required[c.ID]:
				s.Columns = append(s.Columns, c)
				s.Indices = append(s.Indices, idx[i])
			case byFilter[c.ID]:
				s.FilterColumns = append(s.FilterColumns, c)
				s.FilterIndices = append(s.FilterIndices, idx[i])
			}
		}
		if len(s.Columns) == 0 && len(cols) > 0 {
			// Keep one column so the scan still yields its row count: a filter's, or the first.
			if len(s.FilterColumns) > 0 {
				s.Columns, s.Indices = s.FilterColumns[:1], s.FilterIndices[:1]
				s.FilterColumns, s.FilterIndices = s.FilterColumns[1:], s.FilterIndices[1:]
			} else {
				s.Columns, s.Indices = cols[:1], idx[:1]
			}
		}
		if len(s.FilterColumns) == 0 {
			s.FilterColumns, s.FilterIndices = nil, nil
		}
		return &s
	case *Values, *Union, *Distinct:
		// Values and Union are positional and Distinct compares whole rows: their inputs keep
		// every column, but below them pruning starts afresh.
		kids := p.Children()
		out := make([]Plan, len(kids))
		for i, k := range kids {
			out[i] = prune(k, SchemaIDs(k.Schema()))
		}
		return withChildren(p, out)
	case *Filter:
		need := copySet(required)
		ExprColumns(p.Cond, need)
		return &Filter{Input: prune(p.Input, need), Cond: p.Cond}
	case *Project:
		np := &Project{}
		need := map[ColumnID]bool{}
		for i, e := range p.Exprs {
			if required[p.Columns[i].ID] {
				np.Exprs = append(np.Exprs, e)
				np.Columns = append(np.Columns, p.Columns[i])
				ExprColumns(e, need)
			}
		}
		if len(np.Exprs) == 0 && len(p.Exprs) > 0 {
			np.Exprs, np.Columns = p.Exprs[:1], p.Columns[:1]
			ExprColumns(p.Exprs[0], need)
		}
		np.Input = prune(p.Input, need)
		return np
	case *Aggregate:
		na := *p
		na.Aggs = nil
		na.Columns = append([]Column(nil), p.Columns[:len(p.GroupBy)]...)
		need := map[ColumnID]bool{}
		for _, g := range p.GroupBy {
			ExprColumns(g, need)
		}
		for i, a := range p.Aggs {
			col := p.Columns[len(p.GroupBy)+i]
			keepOne := len(p.GroupBy) == 0 && i == len(p.Aggs)-1 && len(na.Aggs) == 0
			if required[col.ID] || keepOne {
				na.Aggs = append(na.Aggs, a)
				na.Columns = append(na.Columns, col)
				ExprColumns(a, need)
			}
		}
		na.Input = prune(p.Input, need)
		return &na
	case *Join:
		need := copySet(required)
		if p.On != nil {
			ExprColumns(p.On, need)
		}
		nj := *p
		nj.Left = prune(p.Left, need)
		nj.Right = prune(p.Right, need)
		nj.Columns = nil
		for _, c := range p.Columns {
			if SchemaIDs(nj.Left.Schema())[c.ID] || (p.Kind == InnerJoin || p.Kind == LeftJoin || p.Kind == CrossJoin) && SchemaIDs(nj.Right.Schema())[c.ID] {
				nj.Columns = append(nj.Columns, c)
			}
		}
		return &nj
	case *Sort:
		need := copySet(required)
		for _, k := range p.Keys {
			ExprColumns(k.Expr, need)
		}
		return &Sort{Input: prune(p.Input, need), Keys: p.Keys}
	case *Limit:
		return &Limit{Input: prune(p.Input, required), Offset: p.Offset, Count: p.Count}
	}
	return p
}

func copySet(s map[ColumnID]bool) map[ColumnID]bool {
	m := make(map[ColumnID]bool, len(s))
	for k := range s {
		m[k] = true
	}
	return m
}
