package sql

import (
	"context"
	"strings"
	"testing"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/cachedb/cachedb/planner"
)

// TestColumnsNamedAsWritten: a query's unaliased computed columns are named by their text as
// written and string literals by their value, as MySQL names them; aliases and plain columns
// keep their names.
func TestColumnsNamedAsWritten(t *testing.T) {
	for query, want := range map[string]string{
		"SELECT COUNT(*), Sum(a), 1+1, a <> b, 'abc', '' FROM t1":                    "COUNT(*)|Sum(a)|1+1|a <> b|abc|",
		"SELECT  a  +  1  , A, a AS x, b y FROM t1":                                  "a  +  1|A|x|y",
		"SELECT DISTINCT CASE WHEN a > 1 THEN 'x' ELSE c END FROM t1":                "CASE WHEN a > 1 THEN 'x' ELSE c END",
		"SELECT concat(c, ',', c) /* a comment */, (SELECT max(a) FROM t2) FROM t1":  "concat(c, ',', c)|(SELECT max(a) FROM t2)",
		"SELECT a+1 FROM t1 UNION SELECT a*2 FROM t2":                                "a+1",
		"WITH w AS (SELECT a*2 AS v FROM t1) SELECT v+0, COUNT(*) FROM w GROUP BY v": "v+0|COUNT(*)",
		"SELECT a*1 FROM t1 WHERE a IN (SELECT a+1 FROM t2) ORDER BY a*1 LIMIT 3":    "a*1",
		"SELECT DATE '2020-01-01' - INTERVAL 1 DAY":                                  "DATE '2020-01-01' - INTERVAL 1 DAY",
	} {
		st, err := Bind(context.Background(), query, testCatalog(t), nil)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		var names []string
		for _, f := range planner.OutputSchema(st.(*planner.Query).Plan).Fields() {
			names = append(names, f.Name)
		}
		if got := strings.Join(names, "|"); got != want {
			t.Errorf("%s: columns %q, want %q", query, got, want)
		}
	}
}

func TestWrittenItems(t *testing.T) {
	for text, want := range map[string]string{
		"select a , b+1 from t":                   "a|b+1",
		"select distinct sql_no_cache a from t":   "a",
		"select `from`, f(x, (y)) from t where z": "`from`|f(x, (y))",
		"with c as (select 1) select 2, 3":        "2|3",
		"select 1 union select 2":                 "1",
		"(select 1) union (select 2)":             "",
		"insert into t select 1":                  "",
		"select 1, 2; select 3":                   "1|2",
		"select 'a,b' , \"c\" from t for update":  "'a,b'|\"c\"",
	} {
		if got := strings.Join(writtenItems(text), "|"); got != want {
			t.Errorf("writtenItems(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestWrittenMatchesChecksTheSplit: a written item names its column only when it reads back as
// the expression the parser gave the item.
func TestWrittenMatchesChecksTheSplit(t *testing.T) {
	stmt, err := parse("SELECT 1+1, a <> b, ? + 1 FROM t")
	if err != nil {
		t.Fatal(err)
	}
	cols := firstSelect(stmt.(sqlparser.TableStatement)).GetColumns()
	expr := func(i int) sqlparser.Expr { return cols[i].(*sqlparser.AliasedExpr).Expr }
	for _, c := range []struct {
		text string
		i    int
		want bool
	}{
		{"1+1", 0, true}, {"1 + 1", 0, true}, {"a <> b", 1, true}, {"? + 1", 2, true},
		{"1+2", 0, false}, {"a <> b", 0, false}, {"1+1 FROM", 0, false}, {"AVG(ALL a)", 0, false},
	} {
		if got := writtenMatches(c.text, expr(c.i)); got != c.want {
			t.Errorf("writtenMatches(%q, item %d) = %v, want %v", c.text, c.i, got, c.want)
		}
	}
}
