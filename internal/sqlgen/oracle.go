package sqlgen

import (
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strings"

	"github.com/cachedb/cachedb/internal/errs"
)

// Runner runs one query and returns its rows, each rendered as one string.
type Runner func(sql string) ([]string, error)

// Failure is an oracle's finding: queries whose results contradict each other, or a query that
// failed with an internal error.
type Failure struct {
	Oracle  string
	Queries []string
	Detail  string
}

func (f *Failure) Error() string {
	return fmt.Sprintf("%s: %s\n  %s", f.Oracle, f.Detail, strings.Join(f.Queries, "\n  "))
}

// Stats counts what a checker did.
type Stats struct {
	Checks      int            // oracle checks whose queries all ran
	Queries     int            // queries sent
	Skipped     int            // checks abandoned because a query failed with a user-facing error
	Unsupported map[string]int // unsupported errors by message
	Errors      map[string]int // other user-facing errors (overflow, invalid input) by message
}

var positions = regexp.MustCompile(`at position [0-9]+`)

// Checker runs oracle checks through a Runner.
type Checker struct {
	Run Runner
	// Twin, when set, runs every query again on the same data in an engine configured to plan
	// it differently (partitions, batch sizes, no pushdown); its rows must be the same multiset,
	// in the same order when the query has an ORDER BY.
	Twin  Runner
	Stats Stats
}

// errSkip abandons a check: a query failed in a way that is not a bug.
type errSkip struct{}

func (errSkip) Error() string { return "skipped" }

// query runs sql; an internal error (or a panic turned into one) is a Failure, any other error
// abandons the check.
func (c *Checker) query(oracle, sql string) ([]string, error) {
	c.Stats.Queries++
	rows, err := c.Run(sql)
	if err == nil {
		return rows, c.compareTwin(oracle, sql, rows)
	}
	switch errs.CategoryOf(err) {
	case errs.Internal:
		return nil, &Failure{Oracle: oracle, Queries: []string{sql}, Detail: "internal error: " + err.Error()}
	case errs.Unsupported:
		c.count(&c.Stats.Unsupported, err)
	default:
		c.count(&c.Stats.Errors, err)
	}
	return nil, errSkip{}
}

func (c *Checker) count(m *map[string]int, err error) {
	if *m == nil {
		*m = map[string]int{}
	}
	msg := positions.ReplaceAllString(err.Error(), "at position N")
	if len(msg) > 120 {
		msg = msg[:120]
	}
	(*m)[msg]++
}

// compareTwin runs sql on the twin engine and compares its rows with rows.
func (c *Checker) compareTwin(oracle, sql string, rows []string) error {
	if c.Twin == nil {
		return nil
	}
	twin, err := c.Twin(sql)
	if err != nil {
		if errs.CategoryOf(err) == errs.Internal {
			return &Failure{Oracle: "twin", Queries: []string{sql}, Detail: "internal error in the twin: " + err.Error()}
		}
		return &Failure{Oracle: "twin", Queries: []string{sql}, Detail: "the twin fails where the engine does not: " + err.Error()}
	}
	d := multisetDiff(rows, twin)
	if d == "" && strings.Contains(sql, "ORDER BY") && strings.Join(rows, "\n") != strings.Join(twin, "\n") {
		d = fmt.Sprintf("same rows, different order: %q against %q", clip(rows), clip(twin))
	}
	if d != "" {
		return &Failure{Oracle: "twin (" + oracle + ")", Queries: []string{sql}, Detail: d}
	}
	return nil
}

// Check runs one randomly chosen oracle with queries from g. It returns a *Failure when the
// engine contradicts itself, nil otherwise (also when the check was abandoned).
func (c *Checker) Check(g *Gen) *Failure {
	oracles := []func(*Gen) error{c.tlpWhere, c.tlpWhere, c.tlpDistinct, c.tlpGroupBy, c.tlpHaving, c.tlpAggregate, c.tlpAggregate, c.noREC, c.noREC, c.orderLimit, c.subqueryRewrite, c.joinRewrite}
	err := oracles[g.pick(len(oracles))](g)
	switch e := err.(type) {
	case nil:
		c.Stats.Checks++
	case errSkip:
		c.Stats.Skipped++
	case *Failure:
		return e
	default:
		return &Failure{Oracle: "checker", Detail: err.Error()}
	}
	return nil
}

// partitions are p, NOT p and p IS NULL: every row satisfies exactly one.
func partitions(p string) []string {
	return []string{p, "NOT " + p, p + " IS NULL"}
}

// tlpWhere: the rows of a query are the rows of its three WHERE partitions, as a multiset.
func (c *Checker) tlpWhere(g *Gen) error {
	f := g.From()
	sel := strings.Join(g.SelectList(f.scope), ", ")
	p := g.Predicate(f)
	base := fmt.Sprintf("SELECT %s FROM %s", sel, f.SQL)
	var parts []string
	for _, q := range partitions(p) {
		parts = append(parts, base+" WHERE "+q)
	}
	return c.compareUnion("TLP WHERE", base, parts, "UNION ALL", g.chance(2))
}

// tlpDistinct: DISTINCT rows are the UNION (distinct) of the partitions' DISTINCT rows.
func (c *Checker) tlpDistinct(g *Gen) error {
	f := g.From()
	sel := strings.Join(g.SelectList(f.scope), ", ")
	p := g.Predicate(f)
	base := fmt.Sprintf("SELECT DISTINCT %s FROM %s", sel, f.SQL)
	var parts []string
	for _, q := range partitions(p) {
		parts = append(parts, base+" WHERE "+q)
	}
	return c.compareUnion("TLP DISTINCT", base, parts, "UNION", true)
}

// tlpGroupBy: the groups of a query are the UNION of the partitions' groups.
func (c *Checker) tlpGroupBy(g *Gen) error {
	f := g.From()
	keys := g.groupKeys(f.scope)
	p := g.Predicate(f)
	base := fmt.Sprintf("SELECT %s FROM %s", strings.Join(keys, ", "), f.SQL)
	group := " GROUP BY " + strings.Join(keys, ", ")
	var parts []string
	for _, q := range partitions(p) {
		parts = append(parts, base+" WHERE "+q+group)
	}
	return c.compareUnion("TLP GROUP BY", base+group, parts, "UNION", true)
}

func (g *Gen) groupKeys(scope []ref) []string {
	n := 1 + g.pick(2)
	keys := make([]string, 0, n)
	for i := 0; i < n; i++ {
		k := scope[g.pick(len(scope))].name
		// An expression key must mention a column: MySQL reads GROUP BY 2 as a position.
		if e := g.withoutSubqueries(func() string { return g.Expr(scope, g.comparable(scope), 1) }); g.chance(4) && strings.Contains(e, ".") {
			k = e
		}
		if i > 0 && k == keys[0] {
			continue
		}
		keys = append(keys, k)
	}
	return keys
}

// tlpHaving: the groups of a grouped query are the groups of its three HAVING partitions.
func (c *Checker) tlpHaving(g *Gen) error {
	f := g.From()
	keys := g.groupKeys(f.scope)
	// A HAVING predicate sees the grouping keys and aggregates of the group.
	var having []ref
	for _, k := range keys {
		for _, r := range f.scope {
			if r.name == k {
				having = append(having, r)
			}
		}
	}
	var aggs []string
	for i := 0; i < 1+g.pick(2); i++ {
		fn, arg, typ := g.aggregate(f.scope, false)
		expr := fn + "(" + arg + ")"
		aggs = append(aggs, expr)
		having = append(having, ref{name: expr, typ: typ})
	}
	p := g.withoutSubqueries(func() string { return g.boolExpr(having, 2) })
	where := ""
	if g.chance(3) {
		where = " WHERE " + g.Predicate(f)
	}
	base := fmt.Sprintf("SELECT %s, %s FROM %s%s GROUP BY %s", strings.Join(keys, ", "), strings.Join(aggs, ", "), f.SQL, where, strings.Join(keys, ", "))
	var parts []string
	for _, q := range partitions(p) {
		parts = append(parts, base+" HAVING "+q)
	}
	return c.compareUnion("TLP HAVING", base, parts, "UNION ALL", g.chance(2))
}

// compareUnion compares want's rows with the partitions' rows, combined by one query joining
// them with op, or (for UNION ALL) by running each and concatenating.
func (c *Checker) compareUnion(oracle, want string, parts []string, op string, asOneQuery bool) error {
	wantRows, err := c.query(oracle, want)
	if err != nil {
		return err
	}
	var got []string
	queries := []string{want}
	if asOneQuery {
		q := strings.Join(parts, " "+op+" ")
		queries = append(queries, q)
		if got, err = c.query(oracle, q); err != nil {
			return err
		}
	} else {
		queries = append(queries, parts...)
		for _, q := range parts {
			rows, err := c.query(oracle, q)
			if err != nil {
				return err
			}
			got = append(got, rows...)
		}
	}
	if d := multisetDiff(wantRows, got); d != "" {
		return &Failure{Oracle: oracle, Queries: queries, Detail: d}
	}
	return nil
}

// tlpAggregate: MIN, MAX, SUM and COUNT of a query are those of its partitions' aggregates.
func (c *Checker) tlpAggregate(g *Gen) error {
	f := g.From()
	fn, arg, _ := g.aggregate(f.scope, true)
	p := g.Predicate(f)
	agg := fn + "(" + arg + ")"
	want := fmt.Sprintf("SELECT %s FROM %s", agg, f.SQL)
	outer := map[string]string{"MIN": "MIN", "MAX": "MAX", "SUM": "SUM", "COUNT": "SUM"}[fn]
	var parts []string
	for _, q := range partitions(p) {
		parts = append(parts, fmt.Sprintf("SELECT %s AS agg FROM %s WHERE %s", agg, f.SQL, q))
	}
	got := fmt.Sprintf("SELECT %s(agg) FROM (%s) AS parts", outer, strings.Join(parts, " UNION ALL "))
	return c.compareValues("TLP aggregate", want, got)
}

// noREC: counting the rows a WHERE keeps equals summing the predicate evaluated per row in
// the select list, where no optimization can move it.
func (c *Checker) noREC(g *Gen) error {
	f := g.From()
	p := g.Predicate(f)
	want := fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE %s", f.SQL, p)
	got := fmt.Sprintf("SELECT COALESCE(SUM(CASE WHEN %s THEN 1 ELSE 0 END), 0) FROM %s", p, f.SQL)
	return c.compareValues("NoREC", want, got)
}

// orderLimit: a LIMIT/OFFSET slice of a totally ordered query is the same slice of its
// unlimited result. Ordering by every selected column leaves ties only between equal rows.
func (c *Checker) orderLimit(g *Gen) error {
	f := g.From()
	sel := g.SelectList(f.scope)
	order := make([]string, len(sel))
	for i := range sel {
		order[i] = fmt.Sprintf("%d %s", i+1, []string{"ASC", "DESC"}[g.pick(2)])
	}
	where := ""
	if g.chance(2) {
		where = " WHERE " + g.Predicate(f)
	}
	base := fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s", strings.Join(sel, ", "), f.SQL, where, strings.Join(order, ", "))
	limit, offset := g.pick(6), g.pick(5)
	sliced := fmt.Sprintf("%s LIMIT %d OFFSET %d", base, limit, offset)
	all, err := c.query("ORDER BY LIMIT", base)
	if err != nil {
		return err
	}
	got, err := c.query("ORDER BY LIMIT", sliced)
	if err != nil {
		return err
	}
	lo, hi := min(offset, len(all)), min(offset+limit, len(all))
	want := all[lo:hi]
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		return &Failure{Oracle: "ORDER BY LIMIT", Queries: []string{base, sliced},
			Detail: fmt.Sprintf("want rows %d..%d of the first query %q, got %q", lo, hi, want, got)}
	}
	return nil
}

// compareValues compares two single-row results; numbers compare by value, so a COUNT's 3
// equals a SUM's 3 and 1.50 equals 1.5.
func (c *Checker) compareValues(oracle, want, got string) error {
	w, err := c.query(oracle, want)
	if err != nil {
		return err
	}
	gotRows, err := c.query(oracle, got)
	if err != nil {
		return err
	}
	if len(w) != 1 || len(gotRows) != 1 || normalize(w[0]) != normalize(gotRows[0]) {
		return &Failure{Oracle: oracle, Queries: []string{want, got}, Detail: fmt.Sprintf("%q != %q", w, gotRows)}
	}
	return nil
}

// normalize writes a decimal number in lowest terms; other text is unchanged.
func normalize(s string) string {
	if r, ok := new(big.Rat).SetString(s); ok && !strings.ContainsAny(s, "eE/") {
		return r.RatString()
	}
	return s
}

// multisetDiff describes how two multisets of rows differ, or returns "" when they are equal.
func multisetDiff(want, got []string) string {
	count := map[string]int{}
	for _, r := range want {
		count[r]++
	}
	for _, r := range got {
		count[r]--
	}
	var missing, extra []string
	for r, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, r)
		}
		for ; n < 0; n++ {
			extra = append(extra, r)
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return fmt.Sprintf("%d rows vs %d; missing from the partitions %q, extra in them %q", len(want), len(got), clip(missing), clip(extra))
}

func clip(rows []string) []string {
	if len(rows) > 8 {
		return append(rows[:8:8], fmt.Sprintf("… %d more", len(rows)-8))
	}
	return rows
}
