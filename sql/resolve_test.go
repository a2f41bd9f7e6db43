package sql

import (
	"strings"
	"testing"
)

// TestNameResolutionRules checks how GROUP BY, HAVING and ORDER BY resolve names, positions and
// expressions (MySQL rules: ORDER BY looks at select items first, GROUP BY and HAVING at the
// FROM columns first).
func TestNameResolutionRules(t *testing.T) {
	tests := []struct {
		name, sql, want string
	}{
		{"order by alias shadows a FROM column", "select b as a from t1 order by a", `
Sort: a#4
  Project: b#2 AS a#4
    Scan: t1 columns=[a#1, b#2, c#3]`},
		{"group by prefers the FROM column over an alias", "select b as a, count(*) from t1 group by a", `
Project: any_value(b)#5 AS a#6, count(*)#7 AS count(*)#8
  Aggregate: group=[a#1] aggs=[any_value(b#2), count(*)]
    Scan: t1 columns=[a#1, b#2, c#3]`},
		{"order by expression equal to a select item", "select a + 1, b from t1 order by a + 1", `
Sort: a + 1#4
  Project: (a#1 + 1) AS a + 1#4, b#2 AS b#5
    Scan: t1 columns=[a#1, b#2, c#3]`},
		{"distinct with order by over selected columns", "select distinct a from t1 order by a + 1", `
Project: a#4 AS a#6
  Sort: (a#1 + 1)#5
    Distinct
      Project: a#1 AS a#4, (a#1 + 1) AS (a#1 + 1)#5
        Scan: t1 columns=[a#1, b#2, c#3]`},
		{"having names a select alias", "select a, count(*) as n from t1 group by a having n > 1", `
Project: a#4 AS a#5, count(*)#6 AS n#7
  Filter: (count(*)#6 > 1)
    Aggregate: group=[a#1] aggs=[count(*)]
      Scan: t1 columns=[a#1, b#2, c#3]`},
		{"select expression over group keys reuses the key", "select (b + 1) * 2 from t1 group by b + 1", `
Project: ((b#2 + 1)#4 * 2) AS (b + 1) * 2#5
  Aggregate: group=[(b#2 + 1)] aggs=[]
    Scan: t1 columns=[a#1, b#2, c#3]`},
		{"order by aggregate not in select list", "select a from t1 group by a order by count(*) desc", `
Project: a#5 AS a#8
  Sort: count(*)#7 DESC
    Project: a#4 AS a#5, count(*)#6 AS count(*)#7
      Aggregate: group=[a#1] aggs=[count(*)]
        Scan: t1 columns=[a#1, b#2, c#3]`},
		{"constant order by items are ignored, a lone constant group by item groups", "select count(*) from t1 group by 'x' order by null", `
Project: count(*)#5 AS count(*)#6
  Aggregate: group=['x'] aggs=[count(*)]
    Scan: t1 columns=[a#1, b#2, c#3]`},
		{"constant group by items beside others are ignored", "select count(*) from t1 group by 'x', a, -1", `
Project: count(*)#5 AS count(*)#6
  Aggregate: group=[a#1] aggs=[count(*)]
    Scan: t1 columns=[a#1, b#2, c#3]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.TrimSpace(bindQuery(t, tt.sql))
			if want := strings.TrimSpace(tt.want); got != want {
				t.Errorf("%s\ngot:\n%s\nwant:\n%s", tt.sql, got, want)
			}
		})
	}
}
