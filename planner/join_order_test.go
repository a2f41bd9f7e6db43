package planner

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/errs"
)

// statsTable is a table known by its schema and statistics only.
type statsTable struct {
	name   string
	schema *arrow.Schema
	stats  catalog.Statistics
}

func (t *statsTable) Name() string          { return t.name }
func (t *statsTable) Schema() *arrow.Schema { return t.schema }
func (t *statsTable) Scan(context.Context, catalog.ScanRequest) (*catalog.ScanPlan, error) {
	return nil, errs.Unsupportedf("statistics only")
}
func (t *statsTable) Statistics(context.Context) (catalog.Statistics, error) { return t.stats, nil }

// colSpec is an int64 column with the bounds [lo, hi] (no bounds when lo > hi) and a distinct
// count (-1 unknown).
type colSpec struct {
	name     string
	lo, hi   int64
	distinct int64
}

// statsScan scans a table of rows rows with int64 columns described by cols.
func (b *planBuilder) statsScan(name string, rows int64, cols ...colSpec) *Scan {
	t := &statsTable{name: name, stats: catalog.Statistics{Rows: rows}}
	var fields []arrow.Field
	s := &Scan{Table: t, Name: name, Alias: name}
	for i, c := range cols {
		fields = append(fields, arrow.Field{Name: c.name, Type: arrow.PrimitiveTypes.Int64, Nullable: true})
		cs := catalog.ColumnStatistics{Distinct: c.distinct, Nulls: 0}
		if c.lo <= c.hi {
			cs.Min, cs.Max = scalar.NewInt64Scalar(c.lo), scalar.NewInt64Scalar(c.hi)
		}
		t.stats.Columns = append(t.stats.Columns, cs)
		s.Columns = append(s.Columns, Column{ID: b.next, Name: c.name, Table: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true})
		s.Indices = append(s.Indices, i)
		b.next++
	}
	t.schema = arrow.NewSchema(fields, nil)
	return s
}

// order renders the joins of p as (probe ⋈ build), relations by alias; × is a cross join.
func order(p Plan) string {
	switch n := p.(type) {
	case *Scan:
		return n.Alias
	case *Join:
		op := "⋈"
		if n.Kind == CrossJoin {
			op = "×"
		}
		return "(" + order(n.Left) + " " + op + " " + order(n.Right) + ")"
	}
	var parts []string
	for _, k := range p.Children() {
		parts = append(parts, order(k))
	}
	return strings.Join(parts, ", ")
}

// crossAll is FROM rels[0], rels[1], … WHERE cond.
func crossAll(cond Expr, rels ...Plan) Plan {
	tree := rels[0]
	for _, r := range rels[1:] {
		tree = crossJoin(tree, r)
	}
	return &Filter{Input: tree, Cond: cond}
}

func TestJoinOrderBuildsOnTheSmallerSide(t *testing.T) {
	b := newPlanBuilder(t)
	big := b.statsScan("big", 1_000_000, colSpec{"k", 1, 1000, -1})
	small := b.statsScan("small", 1000, colSpec{"k", 1, 1000, -1}, colSpec{"v", 1, 1000, -1})
	// FROM small, big: written order would build the hash table on big.
	p, changed := ReorderJoins{}.Rewrite(crossAll(cmp("=", col(small.Columns[0]), col(big.Columns[0])), small, big))
	if !changed {
		t.Fatal("two relations whose right one is larger were left alone")
	}
	if got := order(p); got != "(big ⋈ small)" {
		t.Errorf("order %s, want (big ⋈ small)", got)
	}
	// The output keeps the written column order.
	if s := p.Schema(); s[0].ID != small.Columns[0].ID || s[len(s)-1].ID != big.Columns[0].ID {
		t.Errorf("column order changed: %v", s)
	}

	// A filter on big that leaves fewer rows than small makes big the build side, written
	// order kept: the cluster is left to PushFilters.
	b2 := newPlanBuilder(t)
	small2 := b2.statsScan("small", 1000, colSpec{"k", 1, 1000, -1})
	big2 := b2.statsScan("big", 1_000_000, colSpec{"k", 1, 1000, -1}, colSpec{"id", 1, 1_000_000, -1})
	cond := and(cmp("=", col(small2.Columns[0]), col(big2.Columns[0])), cmp("<", col(big2.Columns[1]), lit(100)))
	if p, changed := (ReorderJoins{}).Rewrite(crossAll(cond, small2, big2)); changed {
		t.Errorf("big filtered to ~100 rows is already the smaller (build) side; got\n%s", Format(p))
	}
}

func TestJoinOrderStar(t *testing.T) {
	// A fact table with three dimensions; one dimension is filtered hard. The fact table is
	// probed once, the filtered dimension first, and no join is a cross join although the
	// written order pairs two dimensions.
	b := newPlanBuilder(t)
	d1 := b.statsScan("d1", 1000, colSpec{"id", 1, 1000, -1}, colSpec{"x", 1, 1000, -1})
	d2 := b.statsScan("d2", 10_000, colSpec{"id", 1, 10_000, -1})
	d3 := b.statsScan("d3", 100, colSpec{"id", 1, 100, -1})
	f := b.statsScan("f", 10_000_000, colSpec{"d1", 1, 1000, -1}, colSpec{"d2", 1, 10_000, -1}, colSpec{"d3", 1, 100, -1})
	cond := and(
		cmp("=", col(f.Columns[0]), col(d1.Columns[0])),
		cmp("=", col(f.Columns[1]), col(d2.Columns[0])),
		cmp("=", col(f.Columns[2]), col(d3.Columns[0])),
		cmp("=", col(d1.Columns[1]), lit(7)),
	)
	p, _ := ReorderJoins{}.Rewrite(crossAll(cond, d1, d2, d3, f))
	if got, want := order(p), "(((f ⋈ d1) ⋈ d3) ⋈ d2)"; got != want {
		t.Errorf("order %s, want %s:\n%s", got, want, Format(p))
	}
}

func TestJoinOrderUsesImpliedEqualities(t *testing.T) {
	// a.k = b.k AND b.k = c.k: b is huge, a and c small; a and c join directly on a.k = c.k,
	// a condition nobody wrote, before b.
	b := newPlanBuilder(t)
	a := b.statsScan("a", 100, colSpec{"k", 1, 1000, -1})
	big := b.statsScan("b", 1_000_000, colSpec{"k", 1, 1000, -1})
	c := b.statsScan("c", 100, colSpec{"k", 1, 1000, -1})
	cond := and(cmp("=", col(a.Columns[0]), col(big.Columns[0])), cmp("=", col(big.Columns[0]), col(c.Columns[0])))
	p, _ := ReorderJoins{}.Rewrite(crossAll(cond, a, big, c))
	if got, want := order(p), "(b ⋈ (a ⋈ c))"; got != want {
		t.Fatalf("order %s, want %s:\n%s", got, want, Format(p))
	}
	inner := p.(*Project).Input.(*Join).Right.(*Join)
	if inner.On == nil || inner.On.String() != fmt.Sprintf("(k#%d = k#%d)", a.Columns[0].ID, c.Columns[0].ID) {
		t.Errorf("a ⋈ c on %v, want the implied a.k = c.k", inner.On)
	}
	// Each class contributes one equality per join: the top join compares b.k with one column.
	top := p.(*Project).Input.(*Join)
	if n := len(conjuncts(top.On)); n != 1 {
		t.Errorf("top join on %s: %d conditions, want 1", top.On, n)
	}
}

func TestJoinOrderCompositeKey(t *testing.T) {
	// A fact table joined with a bridge table on both columns of the bridge's composite key
	// matches one bridge row per fact row: the estimate is the fact table's rows, not the
	// product of the two columns' selectivities.
	b := newPlanBuilder(t)
	fact := b.statsScan("fact", 6_000_000, colSpec{"p", 1, 200_000, -1}, colSpec{"s", 1, 10_000, -1})
	bridge := b.statsScan("bridge", 800_000, colSpec{"p", 1, 200_000, -1}, colSpec{"s", 1, 10_000, -1})
	cond := and(cmp("=", col(fact.Columns[0]), col(bridge.Columns[0])), cmp("=", col(fact.Columns[1]), col(bridge.Columns[1])))
	split := clusterConds([]Plan{fact, bridge}, conjuncts(cond))
	g := newJoinGraph(newEstimator(context.Background()), []Plan{fact, bridge}, split)
	all := newRelSet(2)
	all.add(0)
	all.add(1)
	if got := g.card(all); math.Abs(got-6_000_000)/6_000_000 > 0.01 {
		t.Errorf("fact ⋈ bridge on its composite key: %.0f rows, want about 6000000", got)
	}
}

func TestJoinOrderForeignKeyBounds(t *testing.T) {
	// A foreign key whose bounds and row count match the key's range (TPC-H's l_orderkey: 6M
	// rows in 1..6M, 1.5M distinct) would count as unique; capped by the key's distinct count
	// it estimates the join with the filtered key table as the fact rows times the filter's
	// fraction.
	b := newPlanBuilder(t)
	fact := b.statsScan("fact", 6_000_000, colSpec{"o", 1, 6_000_000, -1})
	dim := b.statsScan("dim", 1_500_000, colSpec{"o", 1, 6_000_000, -1}, colSpec{"d", 1, 100, -1})
	split := clusterConds([]Plan{fact, dim}, []Expr{
		cmp("=", col(fact.Columns[0]), col(dim.Columns[0])),
		cmp("<=", col(dim.Columns[1]), lit(10)), // a tenth of dim
	})
	g := newJoinGraph(newEstimator(context.Background()), []Plan{fact, dim}, split)
	all := newRelSet(2)
	all.add(0)
	all.add(1)
	if got := g.card(all); math.Abs(got-600_000)/600_000 > 0.01 {
		t.Errorf("fact ⋈ dim (a tenth): %.0f rows, want about 600000", got)
	}
}

func TestJoinOrderDisconnected(t *testing.T) {
	// Two pairs with no condition between them: one cross join, between the pairs; the
	// condition over both pairs sits on it.
	b := newPlanBuilder(t)
	a := b.statsScan("a", 100, colSpec{"k", 1, 100, -1})
	a2 := b.statsScan("a2", 1000, colSpec{"k", 1, 100, -1})
	c := b.statsScan("c", 50, colSpec{"k", 1, 50, -1})
	c2 := b.statsScan("c2", 500, colSpec{"k", 1, 50, -1})
	cond := and(
		cmp("=", col(a.Columns[0]), col(a2.Columns[0])),
		cmp("=", col(c.Columns[0]), col(c2.Columns[0])),
		cmp("<", col(a.Columns[0]), col(c.Columns[0])),
	)
	p, _ := ReorderJoins{}.Rewrite(crossAll(cond, a, c, a2, c2))
	if got, want := order(p), "((a2 ⋈ a) ⋈ (c2 ⋈ c))"; got != want {
		t.Fatalf("order %s, want %s:\n%s", got, want, Format(p))
	}
	top := p.(*Project).Input.(*Join)
	if top.Kind != InnerJoin || top.On == nil || !strings.Contains(top.On.String(), "<") {
		t.Errorf("the joins of the two parts carry the condition between them: %s", Format(p))
	}
}

func TestJoinOrderGreedyBeyondDP(t *testing.T) {
	// A chain of maxDPRelations+2 relations written in an order whose neighbours share no
	// condition is ordered greedily, without a cross join.
	b := newPlanBuilder(t)
	n := maxDPRelations + 2
	rels := make([]*Scan, n)
	for i := range rels {
		rels[i] = b.statsScan(fmt.Sprintf("t%d", i), int64(100*(i+1)), colSpec{"k", 1, 100, -1}, colSpec{"j", 1, 100, -1})
	}
	var conds []Expr
	for i := 0; i+1 < n; i++ {
		conds = append(conds, cmp("=", col(rels[i].Columns[1]), col(rels[i+1].Columns[0])))
	}
	// Written order: evens first, then odds.
	var written []Plan
	for _, start := range []int{0, 1} {
		for i := start; i < n; i += 2 {
			written = append(written, rels[i])
		}
	}
	p, _ := ReorderJoins{}.Rewrite(crossAll(and(conds...), written...))
	if strings.Contains(order(p), "×") {
		t.Errorf("cross join in a connected chain: %s", order(p))
	}
	joins := 0
	var walk func(Plan)
	walk = func(p Plan) {
		if j, ok := p.(*Join); ok {
			joins++
			if j.Kind != InnerJoin || len(conjuncts(j.On)) != 1 {
				t.Errorf("join %s on %v: want one chain equality", order(j), j.On)
			}
		}
		for _, k := range p.Children() {
			walk(k)
		}
	}
	walk(p)
	if joins != n-1 {
		t.Errorf("%d joins, want %d", joins, n-1)
	}
}

func TestJoinOrderImpliedFilters(t *testing.T) {
	// (a.x = 1 AND b.y = 2) OR (a.x = 3 AND b.y = 4) filters a by a.x = 1 OR a.x = 3 and b
	// by b.y = 2 OR b.y = 4 before the join; the condition itself stays on the join.
	b := newPlanBuilder(t)
	a := b.statsScan("a", 1000, colSpec{"k", 1, 1000, -1}, colSpec{"x", 1, 10, -1})
	bb := b.statsScan("b", 1000, colSpec{"k", 1, 1000, -1}, colSpec{"y", 1, 10, -1})
	ax, by := col(a.Columns[1]), col(bb.Columns[1])
	cond := and(cmp("=", col(a.Columns[0]), col(bb.Columns[0])),
		or(and(cmp("=", ax, lit(1)), cmp("=", by, lit(2))), and(cmp("=", ax, lit(3)), cmp("=", by, lit(4)))))
	p, changed := ReorderJoins{}.Rewrite(crossAll(cond, a, bb))
	if !changed {
		t.Fatal("implied filters were not derived")
	}
	text := Format(p)
	for _, want := range []string{
		fmt.Sprintf("Filter: ((x#%d = 1) or (x#%d = 3))", ax.ID, ax.ID),
		fmt.Sprintf("Filter: ((y#%d = 2) or (y#%d = 4))", by.ID, by.ID),
		"Join: inner on ((k#",
		"(((x#",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
}
