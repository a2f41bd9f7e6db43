package engine

import (
	"strings"
	"testing"
)

// TestExplainSharedCTE pins the plan of a CTE that aggregates and is referenced twice: one
// plan, optimized once (the filter above one reference stays above it), which both references
// read through one SharedResult.
func TestExplainSharedCTE(t *testing.T) {
	e := newTestEngine(t)
	setupT1(t, e)
	want := `
logical_plan,Project: a#5 AS a#15
logical_plan,  Project: a#5 AS a#5
logical_plan,    Join: inner on (a#12 = a#5)
logical_plan,      Shared CTE: s columns=[a#12, total#14] (computed once per query)
logical_plan,        Project: a#4 AS a#5, sum(b)#6 AS total#7
logical_plan,          Aggregate: group=[a#1] aggs=[sum(b#2)]
logical_plan,            Scan: t1 columns=[a#1, b#2]
logical_plan,      Filter: (total#7 > 1)
logical_plan,        Shared CTE: s columns=[a#5, total#7] (computed once per query)
physical_plan,Project: a
physical_plan,  Project: a
physical_plan,    HashJoin: inner on a = a
physical_plan,      SharedRead: s
physical_plan,        SharedResult: s (computed once per query)
physical_plan,          Project: a, sum(b) AS total
physical_plan,            HashAggregate(mode=single, group=[a], aggs=[sum(b)])
physical_plan,              Scan: t1 [a, b] partitions=1
physical_plan,      Filter: (total > 1)
physical_plan,        SharedRead: s
physical_plan,          SharedResult: s (computed once per query)
physical_plan,            Project: a, sum(b) AS total
physical_plan,              HashAggregate(mode=single, group=[a], aggs=[sum(b)])
physical_plan,                Scan: t1 [a, b] partitions=1`
	sql := "EXPLAIN WITH s AS (SELECT a, sum(b) AS total FROM t1 GROUP BY a) SELECT x.a FROM s x JOIN s y ON x.a = y.a WHERE x.total > 1"
	if got := strings.Join(rows(t, e, sql), "\n"); got != strings.TrimSpace(want) {
		t.Errorf("%s\ngot:\n%s\nwant:\n%s", sql, got, strings.TrimSpace(want))
	}
}
