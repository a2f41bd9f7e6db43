package sql

import (
	"strings"
	"testing"
)

// TestBindPlans checks plan shapes through planner.Format. Column IDs are allocated in binding
// order, so they are part of the expected text: they show which column each reference reads.
func TestBindPlans(t *testing.T) {
	tests := []struct {
		name, sql, want string
	}{
		{"filter order limit", "select a, b+1 from t1 where a > 1 order by 2 desc limit 3", `
Limit: offset=0 count=3
  Sort: b+1#5 DESC
    Project: a#1 AS a#4, (b#2 + 1) AS b+1#5
      Filter: (a#1 > 1)
        Scan: t1 columns=[a#1, b#2, c#3]`},
		{"comma join and star", "select * from t1, t2 where t1.a = t2.a", `
Project: a#1 AS a#6, b#2 AS b#7, c#3 AS c#8, a#4 AS a#9, d#5 AS d#10
  Filter: (a#1 = a#4)
    Join: cross
      Scan: t1 columns=[a#1, b#2, c#3]
      Scan: t2 columns=[a#4, d#5]`},
		{"aliases and cross join", "select T.c from t1 as t cross join t2 u", `
Project: c#3 AS c#6
  Join: cross
    Scan: t1 AS t columns=[a#1, b#2, c#3]
    Scan: t2 AS u columns=[a#4, d#5]`},
		{"left join on", "select * from t1 left join t2 on t1.a = t2.a and t2.d > 1", `
Project: a#1 AS a#6, b#2 AS b#7, c#3 AS c#8, a#4 AS a#9, d#5 AS d#10
  Join: left on ((a#1 = a#4) and (d#5 > 1))
    Scan: t1 columns=[a#1, b#2, c#3]
    Scan: t2 columns=[a#4, d#5]`},
		{"using lists the joined column once, first", "select * from t2 join t1 using (a)", `
Project: a#1 AS a#6, d#2 AS d#7, b#4 AS b#8, c#5 AS c#9
  Join: inner on (a#1 = a#3)
    Scan: t2 columns=[a#1, d#2]
    Scan: t1 columns=[a#3, b#4, c#5]`},
		{"right join is a swapped left join", "select * from t1 right join t2 using (a)", `
Project: a#4 AS a#6, b#2 AS b#7, c#3 AS c#8, d#5 AS d#9
  Join: left on (a#1 = a#4)
    Scan: t2 columns=[a#4, d#5]
    Scan: t1 columns=[a#1, b#2, c#3]`},
		{"natural join", "select a from t1 natural join t2", `
Project: a#1 AS a#6
  Join: inner on (a#1 = a#4)
    Scan: t1 columns=[a#1, b#2, c#3]
    Scan: t2 columns=[a#4, d#5]`},
		{"self join gets fresh ids", "select x.a, y.a from t1 x join t1 y on x.a = y.b", `
Project: a#1 AS a#7, a#4 AS a#8
  Join: inner on (a#1 = b#5)
    Scan: t1 AS x columns=[a#1, b#2, c#3]
    Scan: t1 AS y columns=[a#4, b#5, c#6]`},
		{"select without from", "select 1", `
Project: 1 AS 1#1
  Values: rows=1 columns=[]`},
		{"derived table", "select x.s from (select a+b as s from t1) as x where x.s > 0", `
Project: s#4 AS s#5
  Filter: (s#4 > 0)
    Project: (a#1 + b#2) AS s#4
      Scan: t1 columns=[a#1, b#2, c#3]`},
		{"count star without group by", "select count(*) from t1", `
Project: count(*)#4 AS count(*)#5
  Aggregate: group=[] aggs=[count(*)]
    Scan: t1 columns=[a#1, b#2, c#3]`},
		{"group by alias, order by non-grouped column", "select a as k, count(*) from t1 group by k order by b", `
Project: k#5 AS k#10, count(*)#7 AS count(*)#11
  Sort: any_value(b)#9
    Project: a#4 AS k#5, count(*)#6 AS count(*)#7, any_value(b)#8 AS any_value(b)#9
      Aggregate: group=[a#1] aggs=[count(*), any_value(b#2)]
        Scan: t1 columns=[a#1, b#2, c#3]`},
		{"group by position, having on group expression", "select b+1, sum(a) from t1 group by 1 having b+1 > 2 and count(*) > 0", `
Project: (b#2 + 1)#4 AS b+1#5, sum(a)#6 AS sum(a)#7
  Filter: (((b#2 + 1)#4 > 2) and (count(*)#8 > 0))
    Aggregate: group=[(b#2 + 1)] aggs=[sum(a#1), count(*)]
      Scan: t1 columns=[a#1, b#2, c#3]`},
		{"order by aggregate in select list", "select c, sum(a) from t1 group by c order by sum(a) desc, c", `
Sort: sum(a)#7 DESC, c#5
  Project: c#4 AS c#5, sum(a)#6 AS sum(a)#7
    Aggregate: group=[c#3] aggs=[sum(a#1)]
      Scan: t1 columns=[a#1, b#2, c#3]`},
		{"identical aggregates computed once", "select sum(a), sum(a) + 1 from t1 having sum(a) > 0", `
Project: sum(a)#4 AS sum(a)#5, (sum(a)#4 + 1) AS sum(a) + 1#6
  Filter: (sum(a)#4 > 0)
    Aggregate: group=[] aggs=[sum(a#1)]
      Scan: t1 columns=[a#1, b#2, c#3]`},
		{"having without grouping filters rows", "select a as k from t1 having k > 1", `
Project: a#1 AS k#4
  Filter: (a#1 > 1)
    Scan: t1 columns=[a#1, b#2, c#3]`},
		{"distinct then sort", "select distinct a, b from t1 order by b", `
Sort: b#5
  Distinct
    Project: a#1 AS a#4, b#2 AS b#5
      Scan: t1 columns=[a#1, b#2, c#3]`},
		{"order by hidden column", "select a from t1 order by c limit 5, 2", `
Project: a#4 AS a#6
  Limit: offset=5 count=2
    Sort: c#5
      Project: a#1 AS a#4, c#3 AS c#5
        Scan: t1 columns=[a#1, b#2, c#3]`},
		{"limit offset", "select a from t1 limit 2 offset 1", `
Limit: offset=1 count=2
  Project: a#1 AS a#4
    Scan: t1 columns=[a#1, b#2, c#3]`},
		{"union chain with order and limit", "select a from t1 union select a from t2 union all select 1 order by 1 limit 2 offset 1", `
Limit: offset=1 count=2
  Sort: a#10
    Union: all
      Union: distinct
        Project: a#1 AS a#4
          Scan: t1 columns=[a#1, b#2, c#3]
        Project: a#5 AS a#7
          Scan: t2 columns=[a#5, d#6]
      Project: 1 AS 1#9
        Values: rows=1 columns=[]`},
		{"union order by name", "select a from t1 union all select a from t2 order by a desc", `
Sort: a#8 DESC
  Union: all
    Project: a#1 AS a#4
      Scan: t1 columns=[a#1, b#2, c#3]
    Project: a#5 AS a#7
      Scan: t2 columns=[a#5, d#6]`},
		{"not forms", "select a from t1 where a not between 1 and 2 and c not like 'x%' and a not in (1, 2) and b is not null", `
Project: a#1 AS a#4
  Filter: (((not(between(a#1, 1, 2)) and not((c#3 like 'x%'))) and not(in(a#1, 1, 2))) and is_not_null(b#2))
    Scan: t1 columns=[a#1, b#2, c#3]`},
		{"non-boolean where is tested for truth", "select a from t1 where b", `
Project: a#1 AS a#4
  Filter: is_true(b#2)
    Scan: t1 columns=[a#1, b#2, c#3]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.TrimSpace(bindQuery(t, tt.sql))
			want := strings.TrimSpace(tt.want)
			if got != want {
				t.Errorf("%s\ngot:\n%s\nwant:\n%s", tt.sql, got, want)
			}
		})
	}
}
