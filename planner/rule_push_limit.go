package planner

// PushLimit moves a LIMIT below projections and lets a scan without filters stop early. The
// Limit node itself stays (a scan's limit is a hint: it may return more rows).
type PushLimit struct{}

func (PushLimit) Name() string { return "push_limit" }

func (PushLimit) Rewrite(p Plan) (Plan, bool) {
	return transformUp(p, func(p Plan) (Plan, bool) {
		l, ok := p.(*Limit)
		if !ok || l.Count < 0 {
			return p, false
		}
		switch in := l.Input.(type) {
		case *Project:
			if hasSubqueries(in.Exprs) {
				return p, false
			}
			proj := *in
			proj.Input = &Limit{Input: in.Input, Offset: l.Offset, Count: l.Count}
			return &proj, true
		case *Scan:
			want := l.End()
			if len(in.Filters) > 0 || (in.Limit > 0 && in.Limit <= want) || want == 0 {
				return p, false
			}
			s := *in
			s.Limit = want
			return &Limit{Input: &s, Offset: l.Offset, Count: l.Count}, true
		}
		return p, false
	})
}

func hasSubqueries(es []Expr) bool {
	for _, e := range es {
		if HasSubquery(e) {
			return true
		}
	}
	return false
}
