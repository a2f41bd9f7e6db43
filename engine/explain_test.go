package engine

import (
	"strings"
	"testing"
)

// TestExplainPinsPlans pins the whole EXPLAIN text of queries whose plans show the optimizer's
// main rewrites, so that a change to planning shows up as a diff here.
func TestExplainPinsPlans(t *testing.T) {
	e := newTestEngine(t)
	setupT1(t, e)
	cases := []struct{ sql, want string }{
		{
			// NOT EXISTS becomes an anti join; ORDER BY with LIMIT becomes a top-k sort.
			"EXPLAIN SELECT a FROM t1 WHERE NOT EXISTS (SELECT 1 FROM t2 WHERE t2.a = t1.a) ORDER BY b DESC LIMIT 2",
			`
logical_plan,Project: a#7 AS a#9
logical_plan,  Limit: offset=0 count=2
logical_plan,    Sort: b#8 DESC
logical_plan,      Project: a#1 AS a#7, b#2 AS b#8
logical_plan,        Join: anti on (a#4 = a#1)
logical_plan,          Scan: t1 columns=[a#1, b#2]
logical_plan,          Project: a#4 AS a#4
logical_plan,            Scan: t2 columns=[a#4]
physical_plan,Project: a
physical_plan,  Limit(offset=0, count=2)
physical_plan,    Sort(keys=[b DESC], fetch=2)
physical_plan,      Project: a, b
physical_plan,        HashJoin: anti on a = a
physical_plan,          Scan: t1 [a, b] partitions=1
physical_plan,          Project: a
physical_plan,            Scan: t2 [a] partitions=1`,
		},
		{
			// A WHERE condition on the joined table moves into its scan; unused columns are
			// pruned.
			"EXPLAIN SELECT c, count(*) FROM t1 JOIN t2 ON t1.a = t2.a WHERE d > 100 GROUP BY c",
			`
logical_plan,Project: c#6 AS c#7, count(*)#8 AS count(*)#9
logical_plan,  Aggregate: group=[c#3] aggs=[count(*)]
logical_plan,    Join: inner on (a#1 = a#4)
logical_plan,      Scan: t1 columns=[a#1, c#3]
logical_plan,      Scan: t2 columns=[a#4] filters=[(d#5 > 100)]
physical_plan,Project: c, count(*)
physical_plan,  HashAggregate(mode=single, group=[c], aggs=[count(*)])
physical_plan,    HashJoin: inner on a = a
physical_plan,      Scan: t1 [a, c] partitions=1
physical_plan,      Scan: t2 [a] filters=[(d > 100)] partitions=1`,
		},
	}
	for _, c := range cases {
		got := strings.Join(rows(t, e, c.sql), "\n")
		if got != strings.TrimSpace(c.want) {
			t.Errorf("%s\ngot:\n%s\nwant:\n%s", c.sql, got, strings.TrimSpace(c.want))
		}
	}
}
