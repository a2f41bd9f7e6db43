package sql

import "testing"

func TestSmoke(t *testing.T) {
	for _, q := range []string{
		"select a, b+1 from t1 where a > 1 order by 2 desc limit 3",
		"select a, count(*), sum(b) from t1 group by a having count(*) > 1 order by sum(b)",
		"select * from t1 join t2 using(a)",
		"select c from t1 where exists (select 1 from t2 where t2.a = t1.a)",
	} {
		t.Log(q + "\n" + bindQuery(t, q))
	}
}
