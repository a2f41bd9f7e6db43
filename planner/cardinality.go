package planner

import (
	"context"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/catalog"
)

// Cardinality estimation for join ordering: how many rows a logical plan yields and what its
// columns look like (distinct values, bounds, nulls), from the statistics of the tables it scans
// (catalog.StatisticsTable) and standard selectivity rules. The numbers only rank join orders;
// results never depend on them.

// Selectivities used when statistics say nothing better.
const (
	defaultRows      = 1000 // a table whose source knows no row count
	defaultEqSel     = 0.1  // column = constant, distinct count unknown
	defaultRangeSel  = 1.0 / 3
	defaultLikeSel   = 0.1
	defaultNullSel   = 0.1
	defaultOtherSel  = 0.5
	defaultSemiMatch = 0.5 // rows of a semi join's left side that find a match, keys unknown
)

// colEst describes one column of a plan's output.
type colEst struct {
	// distinct estimates the distinct non-null values in the plan's output (never more than
	// its rows).
	distinct float64
	// domain is the distinct count of the column in its source, before any filter: what the
	// values of a join key are drawn from.
	domain float64
	// exact marks domain as the source's own distinct count (Puffin statistics, say); otherwise
	// it is an upper limit derived from the value bounds or the row count.
	exact bool
	// known marks distinct as coming from statistics (exact, or from integer bounds) rather
	// than from the row count alone.
	known bool
	// lo and hi bound the values on a number line (numbers as they are, dates in days,
	// timestamps in microseconds) when bounded.
	lo, hi  float64
	bounded bool
	// integral marks a column of whole steps (integers, dates) whose range counts its values.
	integral bool
	// nullFrac is the fraction of rows that are NULL, nullKnown when statistics said so.
	nullFrac  float64
	nullKnown bool
}

// relEst is a plan's estimated row count and columns.
type relEst struct {
	rows float64
	cols map[ColumnID]colEst
}

// estimator computes relEsts, reading each table's statistics once.
type estimator struct {
	ctx   context.Context
	stats map[catalog.Table]*catalog.Statistics
	// memo, when not nil, remembers each plan node's estimate, so that estimating every node of
	// a plan costs time linear in its size (plans are immutable; see Rule).
	memo map[Plan]relEst
}

func newEstimator(ctx context.Context) *estimator {
	if ctx == nil {
		ctx = context.Background()
	}
	return &estimator{ctx: ctx, stats: map[catalog.Table]*catalog.Statistics{}}
}

// tableStats returns t's statistics, nil when its source has none (or failed to give them:
// estimates then fall back to defaults, and planning goes on).
func (e *estimator) tableStats(t catalog.Table) *catalog.Statistics {
	if s, ok := e.stats[t]; ok {
		return s
	}
	var out *catalog.Statistics
	if st, ok := t.(catalog.StatisticsTable); ok {
		if s, err := st.Statistics(e.ctx); err == nil {
			out = &s
		}
	}
	e.stats[t] = out
	return out
}

// estimate estimates p's output.
func (e *estimator) estimate(p Plan) relEst {
	if e.memo == nil {
		return e.estimateNode(p)
	}
	if r, ok := e.memo[p]; ok {
		return r
	}
	r := e.estimateNode(p)
	e.memo[p] = r
	return r
}

func (e *estimator) estimateNode(p Plan) relEst {
	switch n := p.(type) {
	case *Scan:
		out := e.scanEstimate(n)
		if len(n.Filters) > 0 {
			out = e.filtered(out, and(n.Filters...))
		}
		if n.Limit > 0 {
			out = withRows(out, math.Min(out.rows, float64(n.Limit)))
		}
		return out
	case *Filter:
		return e.filtered(e.estimate(n.Input), n.Cond)
	case *Project:
		in := e.estimate(n.Input)
		out := relEst{rows: in.rows, cols: map[ColumnID]colEst{}}
		for i, x := range n.Exprs {
			out.cols[n.Columns[i].ID] = exprColumn(x, in)
		}
		return out
	case *Aggregate:
		return e.aggregateEstimate(n)
	case *Join:
		return e.joinEstimate(n)
	case *Sort:
		return e.estimate(n.Input)
	case *Limit:
		in := e.estimate(n.Input)
		if n.Count >= 0 {
			return withRows(in, math.Min(in.rows, float64(n.Count)))
		}
		return in
	case *Distinct:
		in := e.estimate(n.Input)
		return withRows(in, math.Min(in.rows, distinctProduct(in, n.Schema(), in.rows)))
	case *Union:
		out := relEst{cols: map[ColumnID]colEst{}}
		for _, k := range n.Inputs {
			out.rows += e.estimate(k).rows
		}
		return out
	case *Values:
		return relEst{rows: float64(len(n.Rows)), cols: map[ColumnID]colEst{}}
	case *CTERef:
		return e.estimate(n.Input)
	case *SharedRef:
		in := e.estimate(n.Input)
		out := relEst{rows: in.rows, cols: map[ColumnID]colEst{}}
		for i, c := range n.Input.Schema() {
			if ce, ok := in.cols[c.ID]; ok && i < len(n.Columns) {
				out.cols[n.Columns[i].ID] = ce
			}
		}
		return out
	}
	rows := 0.0
	for _, k := range p.Children() {
		rows = math.Max(rows, e.estimate(k).rows)
	}
	if rows == 0 {
		rows = defaultRows
	}
	return relEst{rows: rows, cols: map[ColumnID]colEst{}}
}

// scanEstimate is a table's whole contents as its statistics describe them.
func (e *estimator) scanEstimate(s *Scan) relEst {
	st := e.tableStats(s.Table)
	rows := float64(defaultRows)
	if st != nil && st.Rows >= 0 {
		rows = float64(st.Rows)
	}
	out := relEst{rows: rows, cols: map[ColumnID]colEst{}}
	cols, idx := s.readColumns() // the filters' columns too: they estimate the filters
	for i, c := range cols {
		cs := catalog.UnknownColumn
		if st != nil && i < len(idx) && idx[i] < len(st.Columns) {
			cs = st.Columns[idx[i]]
		}
		out.cols[c.ID] = sourceColumn(cs, c.Type, rows)
	}
	return out
}

// sourceColumn turns a source's column statistics into a colEst. Without a distinct count,
// the bounds of an integral column limit it (max - min + 1); otherwise the row count does.
func sourceColumn(cs catalog.ColumnStatistics, t arrow.DataType, rows float64) colEst {
	c := colEst{integral: isIntegral(t)}
	nonNull := rows
	if cs.Nulls >= 0 && rows > 0 {
		c.nullFrac, c.nullKnown = math.Min(float64(cs.Nulls)/rows, 1), true
		nonNull = math.Max(rows-float64(cs.Nulls), 0)
	}
	if cs.Min != nil && cs.Max != nil {
		lo, ok1 := scalarPosition(cs.Min)
		hi, ok2 := scalarPosition(cs.Max)
		if ok1 && ok2 && lo <= hi {
			c.lo, c.hi, c.bounded = lo, hi, true
		}
	}
	switch {
	case cs.Distinct >= 0:
		c.domain, c.exact, c.known = float64(cs.Distinct), true, true
	case c.bounded && c.integral:
		c.domain, c.known = math.Min(nonNull, c.hi-c.lo+1), true
	default:
		c.domain = nonNull
	}
	c.domain = math.Max(c.domain, 1)
	c.distinct = c.domain
	return c
}

func withRows(r relEst, rows float64) relEst {
	rows = math.Max(rows, 1)
	out := relEst{rows: rows, cols: make(map[ColumnID]colEst, len(r.cols))}
	for id, c := range r.cols {
		c.distinct = math.Max(math.Min(c.distinct, rows), 1)
		out.cols[id] = c
	}
	return out
}

// filtered is in after a filter on cond.
func (e *estimator) filtered(in relEst, cond Expr) relEst {
	cond, _ = foldExpr(cond)
	out := withRows(in, in.rows*conjunctionSel(cond, in))
	// A column compared equal to a constant keeps one value.
	for _, c := range conjuncts(cond) {
		if call, ok := c.(*Call); ok && call.Func == "=" && len(call.Args) == 2 {
			for _, side := range [][2]Expr{{call.Args[0], call.Args[1]}, {call.Args[1], call.Args[0]}} {
				if ref, ok := side[0].(*ColumnRef); ok && isConstant(side[1]) {
					if ce, ok := out.cols[ref.ID]; ok {
						ce.distinct = 1
						out.cols[ref.ID] = ce
					}
				}
			}
		}
	}
	return out
}

// exprColumn describes the column a projection computes: a column passed through (or cast)
// keeps its statistics; anything else is unknown.
func exprColumn(x Expr, in relEst) colEst {
	switch x := x.(type) {
	case *ColumnRef:
		if c, ok := in.cols[x.ID]; ok {
			return c
		}
	case *Cast:
		if ref, ok := x.Expr.(*ColumnRef); ok {
			if c, ok := in.cols[ref.ID]; ok {
				c.bounded = false
				return c
			}
		}
	case *Literal:
		return colEst{distinct: 1, domain: 1, known: true}
	}
	return colEst{distinct: in.rows, domain: in.rows}
}

// aggregateEstimate: one row without GROUP BY; else at most the product of the keys' distinct
// counts (a key that is not a plain column counts as a tenth of the rows).
func (e *estimator) aggregateEstimate(a *Aggregate) relEst {
	in := e.estimate(a.Input)
	out := relEst{rows: 1, cols: map[ColumnID]colEst{}}
	if len(a.GroupBy) > 0 {
		groups := 1.0
		for _, k := range a.GroupBy {
			c := exprColumn(k, in)
			if _, plain := k.(*ColumnRef); !plain && !c.known {
				c.distinct = math.Max(in.rows/10, 1)
			}
			groups *= c.distinct
			if groups > in.rows {
				break
			}
		}
		out.rows = math.Max(math.Min(groups, in.rows), 1)
	}
	for i, c := range a.Columns {
		if i < len(a.GroupBy) {
			ce := exprColumn(a.GroupBy[i], in)
			ce.distinct = math.Min(ce.distinct, out.rows)
			out.cols[c.ID] = ce
		} else {
			out.cols[c.ID] = colEst{distinct: out.rows, domain: out.rows}
		}
	}
	return out
}

// joinEstimate handles joins outside the clusters that ordering rewrites (left, semi and anti
// joins, and inner joins not yet reordered).
func (e *estimator) joinEstimate(j *Join) relEst {
	l, r := e.estimate(j.Left), e.estimate(j.Right)
	both := relEst{rows: l.rows * r.rows, cols: make(map[ColumnID]colEst, len(l.cols)+len(r.cols))}
	for id, c := range l.cols {
		both.cols[id] = c
	}
	for id, c := range r.cols {
		both.cols[id] = c
	}
	sel := 1.0
	if j.On != nil {
		sel = conjunctionSel(j.On, both)
	}
	switch j.Kind {
	case InnerJoin, CrossJoin:
		return withRows(both, both.rows*sel)
	case LeftJoin:
		return withRows(both, math.Max(both.rows*sel, l.rows))
	case SemiJoin:
		return withRows(l, l.rows*math.Min(semiMatch(j.On, l, r), 1))
	}
	return withRows(l, l.rows*(1-defaultSemiMatch))
}

// semiMatch is the fraction of left rows with a match: by containment, the right side's
// distinct keys over the left side's.
func semiMatch(on Expr, l, r relEst) float64 {
	frac := defaultSemiMatch
	if on == nil {
		return 1
	}
	for _, c := range conjuncts(on) {
		call, ok := c.(*Call)
		if !ok || call.Func != "=" || len(call.Args) != 2 {
			continue
		}
		a, aok := call.Args[0].(*ColumnRef)
		b, bok := call.Args[1].(*ColumnRef)
		if !aok || !bok {
			continue
		}
		lc, lok := l.cols[a.ID]
		rc, rok := r.cols[b.ID]
		if !lok || !rok {
			lc, lok = l.cols[b.ID]
			rc, rok = r.cols[a.ID]
		}
		if lok && rok && lc.known && rc.known {
			return math.Min(rc.distinct/lc.distinct, 1)
		}
	}
	return frac
}

// distinctProduct is the product of the columns' distinct counts, capped at limit.
func distinctProduct(in relEst, cols Schema, limit float64) float64 {
	p := 1.0
	for _, c := range cols {
		ce, ok := in.cols[c.ID]
		if !ok || !ce.known {
			return limit
		}
		p *= ce.distinct
		if p >= limit {
			return limit
		}
	}
	return p
}

// conjunctionSel is the fraction of rows of in that satisfy cond. Conjuncts multiply
// (independence), except that ranges on one column combine into one interval measured against
// the column's bounds.
func conjunctionSel(cond Expr, in relEst) float64 {
	sel := 1.0
	ranges := map[ColumnID]*interval{}
	var order []ColumnID
	for _, c := range conjuncts(cond) {
		if id, lo, hi, ok := rangeBound(c, in); ok {
			iv := ranges[id]
			if iv == nil {
				iv = &interval{lo: math.Inf(-1), hi: math.Inf(1)}
				ranges[id] = iv
				order = append(order, id)
			}
			iv.lo, iv.hi = math.Max(iv.lo, lo), math.Min(iv.hi, hi)
			continue
		}
		sel *= predicateSel(c, in)
	}
	for _, id := range order {
		sel *= ranges[id].fraction(in.cols[id])
	}
	return clampSel(sel, in.rows)
}

// clampSel keeps a selectivity within [1/rows, 1]: an estimate never reaches zero rows.
func clampSel(s, rows float64) float64 {
	if math.IsNaN(s) || s > 1 {
		return 1
	}
	return math.Max(s, 1/math.Max(rows, 1))
}

type interval struct{ lo, hi float64 }

// fraction is the share of c's range that the interval covers.
func (iv *interval) fraction(c colEst) float64 {
	lo, hi := math.Max(iv.lo, c.lo), math.Min(iv.hi, c.hi)
	width := c.hi - c.lo
	if c.integral {
		lo, hi = math.Ceil(lo), math.Floor(hi)
		if hi < lo {
			return 0
		}
		return (hi - lo + 1) / (width + 1)
	}
	if hi < lo {
		return 0
	}
	if width <= 0 {
		return 1
	}
	return (hi - lo) / width
}

// rangeBound recognizes `column op constant` (and BETWEEN) on a bounded column as an interval
// of the column's number line. Strict bounds are closed: the difference is one value among many.
func rangeBound(e Expr, in relEst) (ColumnID, float64, float64, bool) {
	call, ok := e.(*Call)
	if !ok {
		return 0, 0, 0, false
	}
	if call.Func == "between" && len(call.Args) == 3 {
		ref, ok := call.Args[0].(*ColumnRef)
		if !ok {
			return 0, 0, 0, false
		}
		c, ok := in.cols[ref.ID]
		lo, ok1 := constPosition(call.Args[1], ref.T)
		hi, ok2 := constPosition(call.Args[2], ref.T)
		if !ok || !c.bounded || !ok1 || !ok2 {
			return 0, 0, 0, false
		}
		return ref.ID, lo, hi, true
	}
	if len(call.Args) != 2 {
		return 0, 0, 0, false
	}
	op := call.Func
	col, val := call.Args[0], call.Args[1]
	if _, ok := col.(*ColumnRef); !ok {
		col, val, op = val, col, flipComparison[op]
	}
	ref, ok := col.(*ColumnRef)
	if !ok {
		return 0, 0, 0, false
	}
	c, ok := in.cols[ref.ID]
	if !ok || !c.bounded {
		return 0, 0, 0, false
	}
	v, ok := constPosition(val, ref.T)
	if !ok {
		return 0, 0, 0, false
	}
	switch op {
	case "<", "<=":
		return ref.ID, math.Inf(-1), v, true
	case ">", ">=":
		return ref.ID, v, math.Inf(1), true
	}
	return 0, 0, 0, false
}

// predicateSel is the selectivity of one conjunct.
func predicateSel(e Expr, in relEst) float64 {
	switch e := e.(type) {
	case *Literal:
		if b, ok := e.Value.(*scalar.Boolean); ok && b.Valid && b.Value {
			return 1
		}
		return 0
	case *Call:
		return callSel(e, in)
	case *Exists, *InSubquery, *QuantifiedSubquery:
		return defaultSemiMatch
	}
	return defaultOtherSel
}

func callSel(c *Call, in relEst) float64 {
	switch c.Func {
	case "and":
		return conjunctionSel(c, in)
	case "or":
		miss := 1.0
		for _, a := range chain(c, "or") {
			miss *= 1 - conjunctionSel(a, in)
		}
		return 1 - miss
	case "not":
		if len(c.Args) == 1 {
			return 1 - conjunctionSel(c.Args[0], in)
		}
	case "is_true":
		if len(c.Args) == 1 {
			return conjunctionSel(c.Args[0], in)
		}
	case "=", "<=>":
		if len(c.Args) == 2 {
			return equalitySel(c.Args[0], c.Args[1], in)
		}
	case "<>":
		if len(c.Args) == 2 {
			return 1 - equalitySel(c.Args[0], c.Args[1], in)
		}
	case "<", "<=", ">", ">=", "between":
		if id, lo, hi, ok := rangeBound(c, in); ok {
			iv := interval{lo: lo, hi: hi}
			return iv.fraction(in.cols[id])
		}
		return defaultRangeSel
	case "in":
		if len(c.Args) >= 2 {
			return math.Min(float64(len(c.Args)-1)*equalitySel(c.Args[0], c.Args[1], in), 1)
		}
	case "like":
		return defaultLikeSel
	case "is_null", "is_not_null":
		s := defaultNullSel
		if ref, ok := c.Args[0].(*ColumnRef); ok {
			if ce, ok := in.cols[ref.ID]; ok && ce.nullKnown {
				s = ce.nullFrac
			}
		}
		if c.Func == "is_not_null" {
			return 1 - s
		}
		return s
	}
	return defaultOtherSel
}

// equalitySel is the selectivity of a = b: 1/distinct for a column against a constant (nearly
// none when the constant lies outside its bounds), 1/max(distinct) for two columns (by
// containment: the values of the column with fewer are among the other's).
func equalitySel(a, b Expr, in relEst) float64 {
	if _, ok := a.(*ColumnRef); !ok {
		a, b = b, a
	}
	ref, ok := a.(*ColumnRef)
	if !ok {
		return defaultEqSel
	}
	c, ok := in.cols[ref.ID]
	if !ok {
		return defaultEqSel
	}
	if other, ok := b.(*ColumnRef); ok {
		if oc, ok := in.cols[other.ID]; ok {
			return 1 / math.Max(math.Max(keyDistinct(c, oc), keyDistinct(oc, c)), 1)
		}
		return defaultEqSel
	}
	if !isConstant(b) {
		return defaultEqSel
	}
	if v, ok := constPosition(b, ref.T); ok && c.bounded && (v < c.lo || v > c.hi) {
		return 0
	}
	if c.known {
		return 1 / math.Max(c.distinct, 1)
	}
	return defaultEqSel
}

// keyDistinct is c's distinct count as a join key compared with other's values. A count that
// is only an upper limit (from value bounds or the row count, not from the source's own
// distinct count) is capped by other's domain when other's value range holds c's: a foreign key
// takes no more distinct values than the key it references. (Without the cap, a foreign key
// whose bounds and row count match the key's range, as TPC-H's l_orderkey does, would count as
// unique and make its joins look far more selective than they are.)
func keyDistinct(c, other colEst) float64 {
	d := c.distinct
	if !c.exact && rangeHolds(other, c) {
		d = math.Min(d, other.domain)
	}
	return math.Max(d, 1)
}

// rangeHolds reports whether outer's value range holds inner's (within 5% of outer's width);
// true when either is unbounded, since nothing then speaks against it.
func rangeHolds(outer, inner colEst) bool {
	if !outer.bounded || !inner.bounded {
		return true
	}
	tol := 0.05 * (outer.hi - outer.lo)
	return inner.lo >= outer.lo-tol && inner.hi <= outer.hi+tol
}

// constPosition places a constant compared with a column of type col on the column's number
// line (see colEst), converting date text as the comparison does.
func constPosition(e Expr, col arrow.DataType) (float64, bool) {
	lit, ok := e.(*Literal)
	if !ok || !lit.Value.IsValid() || !comparableClasses(col, lit.Value.DataType()) {
		return 0, false
	}
	v, ok := temporalConstant(col, lit.Value)
	if !ok {
		return 0, false
	}
	if isTemporal(col) != isTemporal(v.DataType()) || (isTemporal(col) && col.ID() != v.DataType().ID()) {
		return 0, false
	}
	return scalarPosition(v)
}

// scalarPosition is a value's place on its type's number line: numbers as they are, dates in
// days, timestamps in microseconds.
func scalarPosition(s scalar.Scalar) (float64, bool) {
	if !s.IsValid() {
		return 0, false
	}
	switch v := s.(type) {
	case *scalar.Int8:
		return float64(v.Value), true
	case *scalar.Int16:
		return float64(v.Value), true
	case *scalar.Int32:
		return float64(v.Value), true
	case *scalar.Int64:
		return float64(v.Value), true
	case *scalar.Uint8:
		return float64(v.Value), true
	case *scalar.Uint16:
		return float64(v.Value), true
	case *scalar.Uint32:
		return float64(v.Value), true
	case *scalar.Uint64:
		return float64(v.Value), true
	case *scalar.Float32:
		return float64(v.Value), !math.IsNaN(float64(v.Value))
	case *scalar.Float64:
		return v.Value, !math.IsNaN(v.Value)
	case *scalar.Decimal128:
		scale := v.Type.(*arrow.Decimal128Type).Scale
		return decimal128.Num(v.Value).ToFloat64(scale), true
	case *scalar.Date32:
		return float64(v.Value), true
	case *scalar.Timestamp:
		unit := v.Type.(*arrow.TimestampType).Unit
		return float64(v.Value) * float64(unit.Multiplier()) / 1000, true
	}
	return 0, false
}

// isIntegral reports whether a type's values are whole steps (integers, dates).
func isIntegral(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32,
		arrow.UINT64, arrow.DATE32:
		return true
	}
	return false
}
