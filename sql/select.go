package sql

import (
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// tableStatement binds a SELECT or a UNION into a plan whose schema carries the output names.
// outer is the enclosing query block's scope for a subquery in an expression (correlated
// references), nil for a top-level query or a derived table.
func (b *binder) tableStatement(ts sqlparser.TableStatement, outer *scope) (planner.Plan, error) {
	if err := b.enterQuery(); err != nil {
		return nil, err
	}
	defer b.leaveQuery()
	switch s := ts.(type) {
	case *sqlparser.Select:
		return b.selectStmt(s, outer)
	case *sqlparser.Union:
		return b.union(s, outer)
	}
	return nil, errs.Unsupportedf("query %s is not supported", sqlparser.String(ts))
}

// selectItem is one entry of the select list after * expansion.
type selectItem struct {
	ast  sqlparser.Expr  // nil for a column * expanded to
	star *planner.Column // the column, for * items
	name string          // output name
}

// selectBlock is the state of binding one SELECT.
type selectBlock struct {
	b       *binder
	sel     *sqlparser.Select
	scope   *scope
	items   []selectItem
	aliases []selectAlias
	agg     *aggregation // nil unless the block aggregates
	group   *grouping
	// exprs and columns are the projection: the select items, then hidden ORDER BY columns.
	exprs   []planner.Expr
	columns []planner.Column
	visible int
}

// selectStmt binds one SELECT: FROM → WHERE → (GROUP BY / aggregates → HAVING) → projection
// → DISTINCT → ORDER BY → LIMIT, and a last projection dropping hidden ORDER BY columns.
func (b *binder) selectStmt(sel *sqlparser.Select, outer *scope) (planner.Plan, error) {
	endWith, err := b.with(sel.With)
	if err != nil {
		return nil, err
	}
	defer endWith()
	switch {
	case sel.Into != nil:
		return nil, errs.Unsupportedf("SELECT … INTO is not supported")
	case len(sel.Windows) > 0:
		return nil, errs.Unsupportedf("WINDOW clauses are not supported")
	case sel.GroupBy != nil && sel.GroupBy.WithRollup:
		return nil, errs.Unsupportedf("GROUP BY … WITH ROLLUP is not supported")
	}
	input, sc, err := b.from(sel.From, outer)
	if err != nil {
		return nil, err
	}
	if sel.Where != nil {
		cond, err := b.condition(sel.Where.Expr, &exprContext{scope: sc, clause: "where clause"})
		if needsAggregation(err, sc) {
			return nil, errs.Invalidf("Invalid use of group function")
		}
		if err != nil {
			return nil, err
		}
		input = &planner.Filter{Input: input, Cond: cond}
	}
	newBlock := func() (*selectBlock, error) {
		blk := &selectBlock{b: b, sel: sel, scope: sc}
		return blk, blk.expandItems()
	}
	blk, err := newBlock()
	if err != nil {
		return nil, err
	}
	hasGroupBy := sel.GroupBy != nil && len(sel.GroupBy.Exprs) > 0
	if !hasGroupBy && !containsAggregate(sel.SelectExprs, sel.Having, sel.OrderBy) {
		out, err := blk.bindPlain(input)
		if !needsAggregation(err, sc) {
			return out, err
		}
		// An aggregate in a subquery belongs to this block: bind it as an aggregation.
		if blk, err = newBlock(); err != nil {
			return nil, err
		}
	}
	out, err := blk.bindGrouped(input)
	if err != nil || hasGroupBy || len(blk.agg.calls) > 0 {
		return out, err
	}
	// Its aggregates all belonged to enclosing blocks: this block does not aggregate.
	if blk, err = newBlock(); err != nil {
		return nil, err
	}
	return blk.bindPlain(input)
}

// expandItems expands * and t.* and names every select item.
func (s *selectBlock) expandItems() error {
	var written []string
	if s.sel == s.b.writtenSel {
		written = s.b.writtenItems
	}
	for i, se := range s.sel.GetColumns() {
		switch e := se.(type) {
		case *sqlparser.StarExpr:
			qualifier := e.TableName.Name.String()
			if qualifier != "" && !s.scope.hasTable(qualifier) {
				return errs.NotFoundf("Unknown table '%s'", qualifier)
			}
			for _, c := range s.scope.visible(qualifier) {
				c := c
				s.items = append(s.items, selectItem{star: &c, name: c.Name})
			}
		case *sqlparser.AliasedExpr:
			item := selectItem{ast: e.Expr, name: e.As.String()}
			if item.name != "" {
				s.aliases = append(s.aliases, selectAlias{name: item.name, ast: e.Expr})
			} else if c, ok := e.Expr.(*sqlparser.ColName); ok {
				item.name = c.Name.String()
			} else if name, ok := writtenNameAt(written, i, e.Expr); ok {
				item.name = name
			} else {
				item.name = placeholdersAsWritten(sqlparser.String(e.Expr))
			}
			s.items = append(s.items, item)
		default:
			return errs.Unsupportedf("select expression %s is not supported", sqlparser.String(se))
		}
	}
	if len(s.items) == 0 {
		return errs.Invalidf("SELECT * with no tables specified is not valid")
	}
	return nil
}

// bindItems binds the select list in ctx; lift, when non-nil, re-expresses each item over the
// aggregate's output.
func (s *selectBlock) bindItems(ctx *exprContext) error {
	for _, it := range s.items {
		var x planner.Expr
		var err error
		if it.star != nil {
			x = columnRef(*it.star)
		} else if x, err = s.b.expr(it.ast, ctx); err != nil {
			return err
		}
		if x, err = s.lift(x); err != nil {
			return err
		}
		s.exprs = append(s.exprs, x)
		s.columns = append(s.columns, planner.Column{ID: s.b.newID(), Name: it.name, Type: x.Type(), Nullable: true})
	}
	s.visible = len(s.items)
	// Now that the items are bound, HAVING and ORDER BY see aliases as the bound expressions.
	for i := range s.aliases {
		for j, it := range s.items {
			if it.ast == s.aliases[i].ast {
				s.aliases[i].bound = s.exprs[j]
			}
		}
	}
	return nil
}

// lift re-expresses x over the aggregate's output in a grouped block; identity otherwise.
func (s *selectBlock) lift(x planner.Expr) (planner.Expr, error) {
	if s.group == nil {
		return x, nil
	}
	return s.b.lift(s.group, x)
}

// bindPlain binds a SELECT without aggregation.
func (s *selectBlock) bindPlain(input planner.Plan) (planner.Plan, error) {
	if err := s.bindItems(&exprContext{scope: s.scope, clause: "field list"}); err != nil {
		return nil, err
	}
	if s.sel.Having != nil {
		// MySQL: HAVING without grouping filters the rows, and may name select aliases.
		cond, err := s.b.condition(s.sel.Having.Expr, &exprContext{scope: s.scope, clause: "having clause", aliases: s.aliases})
		if err != nil {
			return nil, err
		}
		input = &planner.Filter{Input: input, Cond: cond}
	}
	keys, err := s.orderBy(&exprContext{scope: s.scope, clause: "order clause", aliases: s.aliases})
	if err != nil {
		return nil, err
	}
	return s.finish(input, keys)
}

// bindGrouped binds a SELECT with GROUP BY or aggregates: one Aggregate computes the keys and
// every aggregate call of SELECT, HAVING and ORDER BY; HAVING filters its output.
func (s *selectBlock) bindGrouped(input planner.Plan) (planner.Plan, error) {
	s.agg = &aggregation{}
	s.scope.agg = s.agg
	defer func() { s.scope.agg = nil }()
	s.group = &grouping{input: s.scope.ids(), agg: s.agg}
	if err := s.groupBy(); err != nil {
		return nil, err
	}
	if err := s.bindItems(&exprContext{scope: s.scope, clause: "field list", agg: s.agg}); err != nil {
		return nil, err
	}
	var having planner.Expr
	if s.sel.Having != nil {
		cond, err := s.b.condition(s.sel.Having.Expr, &exprContext{scope: s.scope, clause: "having clause", agg: s.agg, aliases: s.aliases})
		if err != nil {
			return nil, err
		}
		if having, err = s.lift(cond); err != nil {
			return nil, err
		}
	}
	keys, err := s.orderBy(&exprContext{scope: s.scope, clause: "order clause", agg: s.agg, aliases: s.aliases})
	if err != nil {
		return nil, err
	}
	var plan planner.Plan = &planner.Aggregate{
		Input:   input,
		GroupBy: s.group.keys,
		Aggs:    s.agg.calls,
		Columns: append(append([]planner.Column(nil), s.group.columns...), s.agg.columns...),
	}
	if having != nil {
		plan = &planner.Filter{Input: plan, Cond: having}
	}
	return s.finish(plan, keys)
}

// groupBy binds the GROUP BY items: expressions over the FROM columns, select-list aliases
// (after the FROM columns, as MySQL resolves them) or 1-based select-list positions.
func (s *selectBlock) groupBy() error {
	if s.sel.GroupBy == nil {
		return nil
	}
	ctx := &exprContext{scope: s.scope, clause: "group statement", aliases: s.aliases}
	seen := map[string]bool{}
	var constant planner.Expr
	add := func(x planner.Expr) {
		seen[exprKey(x)] = true
		s.group.keys = append(s.group.keys, x)
		s.group.columns = append(s.group.columns, planner.Column{ID: s.b.newID(), Name: displayName(x), Type: x.Type(), Nullable: true})
	}
	for _, ge := range s.sel.GroupBy.Exprs {
		x, err := s.groupItem(ge, ctx)
		if err != nil {
			return err
		}
		if _, isConst := x.(*planner.Literal); isConst {
			if constant == nil {
				constant = x
			}
			continue
		}
		if x == nil || seen[exprKey(x)] {
			continue
		}
		add(x)
	}
	// A constant does not split groups, but GROUP BY of constants only is still grouped: over
	// no rows it gives no row (an ungrouped aggregate gives one), so one constant stays a key.
	if len(s.group.keys) == 0 && constant != nil {
		add(constant)
	}
	return nil
}

// groupItem binds one GROUP BY item; a constant comes back as a *planner.Literal, which the
// caller keeps as a key only when nothing else groups.
func (s *selectBlock) groupItem(ge sqlparser.Expr, ctx *exprContext) (planner.Expr, error) {
	if n, ok := position(ge); ok {
		if n < 1 || n > len(s.items) {
			return nil, errs.NotFoundf("Unknown column '%d' in 'group statement'", n)
		}
		it := s.items[n-1]
		if it.star != nil {
			return columnRef(*it.star), nil
		}
		if containsAggregate(it.ast) {
			return nil, errs.Invalidf("Can't group on '%s'", it.name)
		}
		return s.b.expr(it.ast, &exprContext{scope: s.scope, clause: "group statement"})
	}
	if containsAggregate(ge) {
		return nil, errs.Invalidf("Invalid use of group function")
	}
	x, err := s.b.expr(ge, ctx)
	if err != nil {
		return nil, err
	}
	return x, nil
}

// position reads a select-list position (GROUP BY 2, ORDER BY 1).
func position(e sqlparser.Expr) (int, bool) {
	l, ok := e.(*sqlparser.Literal)
	if !ok || l.Type != sqlparser.IntVal {
		return 0, false
	}
	n := 0
	for _, ch := range l.Val {
		n = n*10 + int(ch-'0')
		if n > 1<<20 {
			break
		}
	}
	return n, true
}

// orderBy binds the ORDER BY terms to sort keys over the projection's columns: a position or an
// output name picks a select item; an expression equal to a select item uses its column; any
// other expression becomes a hidden projection column (not allowed with DISTINCT).
func (s *selectBlock) orderBy(ctx *exprContext) ([]planner.SortKey, error) {
	var keys []planner.SortKey
	for i, o := range s.sel.OrderBy {
		desc := o.Direction == sqlparser.DescOrder
		if n, ok := position(o.Expr); ok {
			if n < 1 || n > s.visible {
				return nil, errs.NotFoundf("Unknown column '%d' in 'order clause'", n)
			}
			keys = append(keys, planner.SortKey{Expr: columnRef(s.columns[n-1]), Desc: desc})
			continue
		}
		if _, ok := o.Expr.(*sqlparser.Literal); ok {
			continue // a constant does not order anything
		}
		if _, ok := o.Expr.(*sqlparser.NullVal); ok {
			continue
		}
		if c, ok := o.Expr.(*sqlparser.ColName); ok && c.Qualifier.IsEmpty() {
			if j := s.outputNamed(c.Name.String()); j >= 0 {
				keys = append(keys, planner.SortKey{Expr: columnRef(s.columns[j]), Desc: desc})
				continue
			}
		}
		x, err := s.b.expr(o.Expr, ctx)
		if err != nil {
			return nil, err
		}
		if x, err = s.lift(x); err != nil {
			return nil, err
		}
		j := s.projected(x)
		if j < 0 {
			if s.sel.Distinct && !s.computedFromVisible(x) {
				return nil, errs.Invalidf("Expression #%d of ORDER BY clause is not in SELECT list, references column '%s' which is not in SELECT list; this is incompatible with DISTINCT", i+1, sqlparser.String(o.Expr))
			}
			j = len(s.exprs)
			s.exprs = append(s.exprs, x)
			s.columns = append(s.columns, planner.Column{ID: s.b.newID(), Name: displayName(x), Type: x.Type(), Nullable: true})
		}
		keys = append(keys, planner.SortKey{Expr: columnRef(s.columns[j]), Desc: desc})
	}
	return keys, nil
}

// computedFromVisible reports whether x reads only columns that visible select items output
// as they are. Such a hidden ORDER BY column is a function of the visible ones, so DISTINCT over
// the projection including it removes the same rows as DISTINCT over the visible columns.
func (s *selectBlock) computedFromVisible(x planner.Expr) bool {
	visible := map[planner.ColumnID]bool{}
	for _, e := range s.exprs[:s.visible] {
		if c, ok := e.(*planner.ColumnRef); ok {
			visible[c.ID] = true
		}
	}
	if planner.HasSubquery(x) {
		return false
	}
	used := map[planner.ColumnID]bool{}
	planner.ExprColumns(x, used)
	for id := range used {
		if !visible[id] {
			return false
		}
	}
	return true
}

// outputNamed returns the select item whose output name is name, -1 if none.
func (s *selectBlock) outputNamed(name string) int {
	for j := 0; j < s.visible; j++ {
		if strings.EqualFold(s.items[j].name, name) {
			return j
		}
	}
	return -1
}

// projected returns the projection column computing x, -1 if none.
func (s *selectBlock) projected(x planner.Expr) int {
	key := exprKey(x)
	for j, e := range s.exprs {
		if exprKey(e) == key {
			return j
		}
	}
	return -1
}

// finish stacks projection, DISTINCT, sort, limit and the final projection on input.
func (s *selectBlock) finish(input planner.Plan, keys []planner.SortKey) (planner.Plan, error) {
	var plan planner.Plan = &planner.Project{Input: input, Exprs: s.exprs, Columns: s.columns}
	if s.sel.Distinct {
		plan = &planner.Distinct{Input: plan}
	}
	if len(keys) > 0 {
		plan = &planner.Sort{Input: plan, Keys: keys}
	}
	plan, err := s.b.limit(plan, s.sel.Limit)
	if err != nil {
		return nil, err
	}
	if len(s.exprs) > s.visible {
		plan = s.b.dropHidden(plan, s.visible)
	}
	return plan, nil
}

// dropHidden projects the first n columns of plan under fresh IDs.
func (b *binder) dropHidden(plan planner.Plan, n int) planner.Plan {
	in := plan.Schema()
	p := &planner.Project{Input: plan}
	for _, c := range in[:n] {
		p.Exprs = append(p.Exprs, columnRef(c))
		out := c
		out.ID = b.newID()
		p.Columns = append(p.Columns, out)
	}
	return p
}

// limit applies LIMIT [offset,] count / LIMIT count OFFSET offset.
func (b *binder) limit(plan planner.Plan, l *sqlparser.Limit) (planner.Plan, error) {
	if l == nil {
		return plan, nil
	}
	out := &planner.Limit{Input: plan, Count: -1}
	var err error
	if l.Rowcount != nil {
		if out.Count, err = b.limitValue(l.Rowcount, -1); err != nil {
			return nil, err
		}
	}
	if l.Offset != nil {
		if out.Offset, err = b.limitValue(l.Offset, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// limitValue reads a LIMIT or OFFSET operand: a non-negative integer literal, or a ? bound to
// one. MySQL takes any unsigned 64-bit value (LIMIT 18446744073709551615 is its documented "all
// rows"); one past int64 reads as math.MaxInt64, which no table reaches. An unbound ? (binding
// to prepare, without values) reads as unknown: the plan is then only used for its schema,
// which the limit does not change.
func (b *binder) limitValue(e sqlparser.Expr, unknown int64) (int64, error) {
	x, err := b.expr(e, &exprContext{scope: newScope(nil), clause: "limit clause"})
	if err != nil {
		return 0, err
	}
	if p, ok := x.(*planner.Param); ok {
		b.hintParam(p.Index, arrow.PrimitiveTypes.Int64)
		return unknown, nil
	}
	if lit, ok := x.(*planner.Literal); ok && lit.Value.IsValid() {
		if v, ok := int64Value(lit); ok && v >= 0 {
			return v, nil
		}
		if unsignedLimit(lit) {
			return math.MaxInt64, nil
		}
	}
	return 0, errs.Invalidf("Incorrect arguments to LIMIT: %s", sqlparser.String(e))
}

// placeholdersAsWritten turns the placeholders vitess prints (:v1, :v2, …) back into ?, so a
// column computed from a parameter is named as MySQL names it: SELECT ? + 1 gives "? + 1".
func placeholdersAsWritten(name string) string {
	if !strings.Contains(name, ":v") {
		return name
	}
	var out strings.Builder
	var quote byte
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		}
		if quote == 0 && name[i] == ':' && i+2 < len(name) && name[i+1] == 'v' && name[i+2] >= '0' && name[i+2] <= '9' {
			j := i + 2
			for j < len(name) && name[j] >= '0' && name[j] <= '9' {
				j++
			}
			out.WriteByte('?')
			i = j - 1
			continue
		}
		out.WriteByte(name[i])
	}
	return out.String()
}
