package sqlgen

import (
	"fmt"
	"strings"
)

// Rewrite oracles: two spellings of one query that MySQL defines to keep the same rows, which
// an engine usually plans differently (semi-joins against correlated subqueries, join
// conditions against filters).

// subqueryRewrite: in WHERE only TRUE keeps a row, so
//
//	x IN (SELECT y FROM s WHERE q)       ≡ EXISTS (SELECT 1 FROM s WHERE q AND y = x)
//	x op ANY (SELECT y FROM s WHERE q)   ≡ EXISTS (SELECT 1 FROM s WHERE q AND x op y)
//	x op ALL (SELECT y FROM s WHERE q)   ≡ NOT EXISTS (SELECT 1 FROM s WHERE q AND (x op y) IS NOT TRUE)
func (c *Checker) subqueryRewrite(g *Gen) error {
	f := g.From()
	t := g.comparable(f.scope)
	var tables []Table
	for _, tb := range g.schema.Tables {
		for _, col := range tb.Columns {
			if sameClass(col.Type, t) {
				tables = append(tables, tb)
				break
			}
		}
	}
	if len(tables) == 0 {
		return nil
	}
	tb := tables[g.pick(len(tables))]
	sa := g.alias("s")
	inner := scopeOf([]Table{tb}, []string{sa})
	y := g.column(inner, t)
	x := g.withoutSubqueries(func() string { return g.Expr(f.scope, t, 1) })
	q := "TRUE"
	if !g.chance(3) {
		both := append(append([]ref{}, inner...), f.scope...)
		q = g.withoutSubqueries(func() string { return g.boolExpr(both, 1) })
	}
	from := fmt.Sprintf("%s AS %s", tb.Name, sa)
	op := comparisonOps[g.pick(6)]
	var p1, p2 string
	switch g.pick(3) {
	case 0:
		p1 = fmt.Sprintf("%s IN (SELECT %s FROM %s WHERE %s)", x, y, from, q)
		p2 = fmt.Sprintf("EXISTS (SELECT 1 FROM %s WHERE %s AND %s = %s)", from, q, y, x)
	case 1:
		p1 = fmt.Sprintf("%s %s ANY (SELECT %s FROM %s WHERE %s)", x, op, y, from, q)
		p2 = fmt.Sprintf("EXISTS (SELECT 1 FROM %s WHERE %s AND %s %s %s)", from, q, x, op, y)
	default:
		p1 = fmt.Sprintf("%s %s ALL (SELECT %s FROM %s WHERE %s)", x, op, y, from, q)
		p2 = fmt.Sprintf("NOT EXISTS (SELECT 1 FROM %s WHERE %s AND (%s %s %s) IS NOT TRUE)", from, q, x, op, y)
	}
	sel := strings.Join(g.SelectList(f.scope), ", ")
	want := fmt.Sprintf("SELECT %s FROM %s WHERE %s", sel, f.SQL, p1)
	got := fmt.Sprintf("SELECT %s FROM %s WHERE %s", sel, f.SQL, p2)
	return c.compareUnion("subquery rewrite", want, []string{got}, "", false)
}

// joinRewrite: an inner join's ON condition may as well be a WHERE over the cross product.
func (c *Checker) joinRewrite(g *Gen) error {
	a, b := g.source(), g.source()
	scope := append(append([]ref{}, a.scope...), b.scope...)
	on := g.joinCondition(scope)
	sel := strings.Join(g.SelectList(scope), ", ")
	want := fmt.Sprintf("SELECT %s FROM %s JOIN %s ON %s", sel, a.SQL, b.SQL, on)
	got := fmt.Sprintf("SELECT %s FROM %s CROSS JOIN %s WHERE %s", sel, a.SQL, b.SQL, on)
	return c.compareUnion("join rewrite", want, []string{got}, "", false)
}
