package sql

import (
	"context"
	"testing"
)

// FuzzBind feeds arbitrary text to Bind over the test catalog. Errors are fine; panics are not.
func FuzzBind(f *testing.F) {
	for _, s := range []string{
		"select a, b+1 from t1 where a > 1 order by 2 desc limit 3",
		"select c, count(*), sum(a) from t1 group by c having count(*) > 1 order by sum(a)",
		"select * from t1 left join t2 using (a) where d in (select x from t3 where y = c)",
		"select (select max(d) from t2 where t2.a = t1.a) from t1 group by a",
		"select a from t1 union select a from t2 order by 1 limit 1 offset 1",
		"select distinct a, cast(b as decimal(5,2)) / 3 from t1 order by a + 1",
		"insert into t1 (c, a) select y, x from t3",
		"create table z (a int primary key, b varchar(3) not null default 'x')",
		"select case a when 1 then 'x' else 2 end, -9223372036854775808, 1.50, 1e3 from t1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		_, _ = Bind(context.Background(), text, testCatalog(t), nil)
	})
}
