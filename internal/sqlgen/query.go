package sqlgen

import (
	"fmt"
	"strings"
)

// From is a FROM clause and the columns it makes visible.
type From struct {
	SQL   string
	scope []ref
}

// alias returns a fresh table alias, so that subqueries never shadow an outer alias.
func (g *Gen) alias(prefix string) string {
	g.aliasSeq++
	return fmt.Sprintf("%s%d", prefix, g.aliasSeq)
}

// source is a table or a derived table under a fresh alias.
func (g *Gen) source() From {
	ts := g.schema.Tables
	t := ts[g.pick(len(ts))]
	if g.chance(5) {
		return g.derived(t)
	}
	a := g.alias("a")
	return From{SQL: t.Name + " AS " + a, scope: scopeOf([]Table{t}, []string{a})}
}

// derived is a subquery in FROM over t: some of its columns, filtered, sometimes DISTINCT,
// grouped, or the UNION [ALL] of two filtered selections.
func (g *Gen) derived(t Table) From {
	in := g.alias("i")
	inner := scopeOf([]Table{t}, []string{in})
	n := 1 + g.pick(min(3, len(inner)))
	cols := make([]string, n)
	d := g.alias("d")
	var scope []ref
	for i := range cols {
		c := inner[g.pick(len(inner))]
		cols[i] = fmt.Sprintf("%s AS x%d", c.name, i)
		scope = append(scope, ref{name: fmt.Sprintf("%s.x%d", d, i), typ: c.typ})
	}
	sel := func(distinct string) string {
		q := fmt.Sprintf("SELECT %s%s FROM %s AS %s", distinct, strings.Join(cols, ", "), t.Name, in)
		if g.chance(2) {
			q += " WHERE " + g.withoutSubqueries(func() string { return g.boolExpr(inner, 1) })
		}
		return q
	}
	var body string
	switch g.pick(5) {
	case 4:
		// Grouped by its columns, with one aggregate more as the last column.
		fn, arg, typ := g.aggregate(inner, false)
		keys := make([]string, len(cols))
		for i, c := range cols {
			keys[i] = c[:strings.Index(c, " AS ")]
		}
		body = fmt.Sprintf("SELECT %s, %s(%s) AS x%d FROM %s AS %s GROUP BY %s", strings.Join(cols, ", "), fn, arg, len(cols), t.Name, in, strings.Join(keys, ", "))
		scope = append(scope, ref{name: fmt.Sprintf("%s.x%d", d, len(cols)), typ: typ})
	case 0:
		body = sel("DISTINCT ")
	case 1:
		body = sel("") + " " + []string{"UNION", "UNION ALL"}[g.pick(2)] + " " + sel("")
	default:
		body = sel("")
	}
	return From{SQL: fmt.Sprintf("(%s) AS %s", body, d), scope: scope}
}

// From is one source, or two joined as INNER, LEFT, CROSS or comma joins.
func (g *Gen) From() From {
	first := g.source()
	if g.chance(2) {
		return first
	}
	second := g.source()
	scope := append(append([]ref{}, first.scope...), second.scope...)
	left, right := first.SQL, second.SQL
	switch g.pick(4) {
	case 0:
		return From{SQL: fmt.Sprintf("%s JOIN %s ON %s", left, right, g.joinCondition(scope)), scope: scope}
	case 1:
		return From{SQL: fmt.Sprintf("%s LEFT JOIN %s ON %s", left, right, g.joinCondition(scope)), scope: scope}
	case 2:
		return From{SQL: fmt.Sprintf("%s CROSS JOIN %s", left, right), scope: scope}
	default:
		return From{SQL: left + ", " + right, scope: scope}
	}
}

// joinCondition is usually an equality of two columns of one class (an equi-join the planner
// may hash), otherwise any predicate.
func (g *Gen) joinCondition(scope []ref) string {
	if g.chance(4) {
		return g.withoutSubqueries(func() string { return g.boolExpr(scope, 1) })
	}
	for tries := 0; tries < 8; tries++ {
		x := scope[g.pick(len(scope))]
		y := scope[g.pick(len(scope))]
		if sameClass(x.typ, y.typ) && x.name[:strings.IndexByte(x.name, '.')] != y.name[:strings.IndexByte(y.name, '.')] {
			cond := fmt.Sprintf("%s = %s", x.name, y.name)
			if g.chance(3) {
				cond += " AND " + g.withoutSubqueries(func() string { return g.comparison(scope, 0) })
			}
			return cond
		}
	}
	return g.withoutSubqueries(func() string { return g.comparison(scope, 1) })
}

func (g *Gen) withoutSubqueries(f func() string) string {
	was := g.subqueries
	g.subqueries = false
	defer func() { g.subqueries = was }()
	return f()
}

// SelectList is one to three expressions over scope.
func (g *Gen) SelectList(scope []ref) []string {
	n := 1 + g.pick(3)
	out := make([]string, n)
	for i := range out {
		if g.chance(2) {
			out[i] = scope[g.pick(len(scope))].name
			continue
		}
		out[i] = g.Expr(scope, g.comparable(scope), 2)
	}
	return out
}

// Predicate is a random predicate over the FROM clause's columns, one to three levels deep.
func (g *Gen) Predicate(f From) string { return g.boolExpr(f.scope, 1+g.pick(3)) }

// subquery builds a subquery over a random table; body receives the inner alias's scope plus
// the outer scope (for correlation) and returns the select list and an optional WHERE.
func (g *Gen) subquery(outer []ref, want Type, agg bool) string {
	var candidates []Table
	for _, t := range g.schema.Tables {
		for _, c := range t.Columns {
			if sameClass(c.Type, want) {
				candidates = append(candidates, t)
				break
			}
		}
	}
	if len(candidates) == 0 {
		return ""
	}
	t := candidates[g.pick(len(candidates))]
	sa := g.alias("s")
	inner := scopeOf([]Table{t}, []string{sa})
	col := g.column(inner, want)
	sel := col
	if agg {
		sel = []string{"MIN", "MAX"}[g.pick(2)] + "(" + col + ")"
		if sameClass(want, Int) && g.chance(3) {
			sel = "COUNT(*)"
		}
	}
	where := ""
	if !g.chance(4) {
		both := append(append([]ref{}, inner...), outer...)
		where = " WHERE " + g.withoutSubqueries(func() string { return g.boolExpr(both, 1) })
	}
	return fmt.Sprintf("(SELECT %s FROM %s AS %s%s)", sel, t.Name, sa, where)
}

// scalarSubquery is an aggregate subquery of class t (one row by construction), or "".
func (g *Gen) scalarSubquery(scope []ref, t Type) string {
	if t == Bool {
		return ""
	}
	return g.subquery(scope, t, true)
}

// subqueryPredicate is EXISTS, IN, or a quantified comparison against a subquery.
func (g *Gen) subqueryPredicate(scope []ref) string {
	t := g.comparable(scope)
	sub := g.subquery(scope, t, false)
	if sub == "" {
		return g.comparison(scope, 0)
	}
	left := g.withoutSubqueries(func() string { return g.Expr(scope, t, 1) })
	switch g.pick(4) {
	case 0:
		return fmt.Sprintf("(%sEXISTS %s)", g.not(), sub)
	case 1:
		return fmt.Sprintf("(%s %sIN %s)", left, g.not(), sub)
	default:
		op := comparisonOps[g.pick(6)]
		return fmt.Sprintf("(%s %s %s %s)", left, op, []string{"ANY", "ALL", "SOME"}[g.pick(3)], sub)
	}
}

// aggregate is an aggregate over scope and its result's type class. recombinable restricts it
// to what TLP can rebuild from partitions (no AVG, no COUNT(DISTINCT)); SUM and AVG never take
// a DOUBLE, whose sum depends on the order of addition.
func (g *Gen) aggregate(scope []ref, recombinable bool) (fn, arg string, typ Type) {
	t := g.comparable(scope)
	x := g.withoutSubqueries(func() string { return g.Expr(scope, t, 1) })
	choices := 6
	if recombinable {
		choices = 4
	}
	switch g.pick(choices) {
	case 0:
		return "MIN", x, t
	case 1:
		return "MAX", x, t
	case 2:
		if g.chance(2) {
			return "COUNT", "*", Int
		}
		return "COUNT", x, Int
	case 3:
		// A quotient carries more digits than its type shows, so partition sums rounded to the
		// type need not add up to the whole sum: no division under a recombined SUM.
		if (t == Int || t == Decimal) && !(recombinable && strings.Contains(x, "/")) {
			return "SUM", x, Decimal
		}
		return "COUNT", x, Int
	case 4:
		if t == Int || t == Decimal {
			return "AVG", x, Decimal
		}
		return "MAX", x, t
	default:
		return "COUNT", "DISTINCT " + x, Int
	}
}
