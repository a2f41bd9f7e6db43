package planner

import (
	"context"
	"testing"
)

// reduceCase builds lines (1,000,000 rows, 200,000 distinct parts) grouped by part with the
// sum of qty, and parts (200,000 rows) filtered to about 200 by brand; join joins them.
type reduceCase struct {
	b            *planBuilder
	lines, parts *Scan
	agg          *Aggregate
}

func newReduceCase(t *testing.T) *reduceCase {
	b := newPlanBuilder(t)
	lines := b.statsScan("lines", 1_000_000, colSpec{"l_part", 1, 200_000, 200_000}, colSpec{"qty", 1, 50, 50})
	parts := b.statsScan("parts", 200_000, colSpec{"p_part", 1, 200_000, 200_000}, colSpec{"brand", 1, 1000, 1000})
	parts.Filters = []Expr{cmp("=", col(parts.Columns[1]), lit(7))}
	sum := &AggregateCall{Func: "sum", Args: []Expr{col(lines.Columns[1])}, T: lines.Columns[1].Type}
	agg := &Aggregate{Input: lines, GroupBy: []Expr{col(lines.Columns[0])}, Aggs: []*AggregateCall{sum},
		Columns: []Column{lines.Columns[0], {ID: b.next, Name: "sum(qty)", Type: lines.Columns[1].Type, Nullable: true}}}
	b.next++
	return &reduceCase{b: b, lines: lines, parts: parts, agg: agg}
}

func (c *reduceCase) join(kind JoinKind, l, r Plan, on Expr) *Join {
	cols := append(append(Schema{}, l.Schema()...), r.Schema()...)
	if kind == SemiJoin || kind == AntiJoin || kind == NullAwareAntiJoin {
		cols = append(Schema{}, l.Schema()...)
	}
	return &Join{Left: l, Right: r, Kind: kind, On: on, Columns: cols}
}

// TestReduceGroupedJoinsNarrowsTheAggregateInput: a grouped aggregate joined on its key with a
// filtered scan groups only the rows whose key that scan has (a semi join with a copy of it),
// on either side of an inner join and under projections; through the right side of a semi
// join that equates the joined column with the scan's.
func TestReduceGroupedJoinsNarrowsTheAggregateInput(t *testing.T) {
	c := newReduceCase(t)
	key, part := col(c.agg.Columns[0]), col(c.parts.Columns[0])
	reduced := `Aggregate: group=[l_part#1] aggs=[sum(qty#2)]
    Join: semi on (l_part#1 = p_part#3)
      Scan: lines columns=[l_part#1, qty#2]
      Scan: parts columns=[p_part#3, brand#4] filters=[(brand#4 = 7)]`
	assertPlan(t, ReduceGroupedJoins(context.Background(), c.join(InnerJoin, c.agg, c.parts, cmp("=", key, part))), `
Join: inner on (l_part#1 = p_part#3)
  `+reduced+`
  Scan: parts columns=[p_part#3, brand#4] filters=[(brand#4 = 7)]`)

	// The aggregate on the right, under a projection, the condition written the other way.
	proj := c.b.project(c.agg, col(c.agg.Columns[1]), key)
	got := ReduceGroupedJoins(context.Background(), c.join(InnerJoin, c.parts, proj, cmp("=", part, col(proj.Columns[1]))))
	inner := got.(*Join).Right.(*Project).Input.(*Aggregate).Input
	if j, ok := inner.(*Join); !ok || j.Kind != SemiJoin || j.Right.(*Scan).Name != "parts" {
		t.Errorf("aggregate under a projection on the right not narrowed:\n%s", Format(got))
	}

	// The joined column equals the scan's through a semi join: others ⋉ parts on o_part = p_part.
	others := c.b.statsScan("others", 800_000, colSpec{"o_part", 1, 200_000, 200_000})
	semi := c.join(SemiJoin, others, c.parts, cmp("=", col(others.Columns[0]), part))
	got = ReduceGroupedJoins(context.Background(), c.join(InnerJoin, c.agg, semi, cmp("=", key, col(others.Columns[0]))))
	if j, ok := got.(*Join).Left.(*Aggregate).Input.(*Join); !ok || j.Kind != SemiJoin || j.Right.(*Scan).Name != "parts" {
		t.Errorf("not narrowed by the scan a semi join equates the key with:\n%s", Format(got))
	}
}

// TestReduceGroupedJoinsLeavesOtherPlans: no narrowing where it would not be exact or would
// not pay: a scan without filters, one whose filter keeps most rows, a column that
// reaches the scan only through an anti join, an aggregate joined by a NOT IN (NULL keys
// matter), a joined column that is not a group key.
func TestReduceGroupedJoinsLeavesOtherPlans(t *testing.T) {
	c := newReduceCase(t)
	key, part := col(c.agg.Columns[0]), col(c.parts.Columns[0])
	// Small tables, well below the 200,000 keys: unfiltered, and filtered to most of its rows.
	unfiltered := c.b.statsScan("few", 1_000, colSpec{"f_part", 1, 200_000, 1_000})
	wide := c.b.statsScan("some", 10_000, colSpec{"s_part", 1, 200_000, 10_000}, colSpec{"s_brand", 1, 1000, 1000})
	wide.Filters = []Expr{cmp(">", col(wide.Columns[1]), lit(1))}
	others := c.b.statsScan("others", 800_000, colSpec{"o_part", 1, 200_000, 200_000})
	anti := c.join(AntiJoin, others, c.parts, cmp("=", col(others.Columns[0]), part))
	cases := map[string]Plan{
		"unfiltered":  c.join(InnerJoin, c.agg, unfiltered, cmp("=", key, col(unfiltered.Columns[0]))),
		"most rows":   c.join(InnerJoin, c.agg, wide, cmp("=", key, col(wide.Columns[0]))),
		"anti join":   c.join(InnerJoin, c.agg, anti, cmp("=", key, col(others.Columns[0]))),
		"not in":      c.join(NullAwareAntiJoin, c.parts, c.agg, cmp("=", part, key)),
		"not grouped": c.join(InnerJoin, c.agg, c.parts, cmp("=", col(c.agg.Columns[1]), part)),
	}
	for name, p := range cases {
		if got := ReduceGroupedJoins(context.Background(), p); Format(got) != Format(p) {
			t.Errorf("%s: plan changed:\n%s", name, Format(got))
		}
	}
}
