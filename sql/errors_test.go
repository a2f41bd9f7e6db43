package sql

import (
	"context"
	"strings"
	"testing"
)

// TestBindErrors checks the category and the message of errors for bad input.
func TestBindErrors(t *testing.T) {
	tests := []struct {
		sql, category, msg string
	}{
		{"select from t1", "invalid input", "syntax error at position 12"},
		{"selec 1", "invalid input", "syntax error at position 6 near 'selec'"},
		{"", "invalid input", "Query was empty"},
		{"select * from nope", "not found", "Table 'nope' doesn't exist"},
		{"select zz from t1", "not found", "Unknown column 'zz' in 'field list'"},
		{"select t1.zz from t1", "not found", "Unknown column 't1.zz' in 'field list'"},
		{"select a from t1 where zz = 1", "not found", "Unknown column 'zz' in 'where clause'"},
		{"select a from t1 order by zz", "not found", "Unknown column 'zz' in 'order clause'"},
		{"select a from t1 group by zz", "not found", "Unknown column 'zz' in 'group statement'"},
		{"select a from t1, t2", "invalid input", "Column 'a' in field list is ambiguous"},
		{"select 1 from t1, t2 where a = 1", "invalid input", "Column 'a' in where clause is ambiguous"},
		{"select * from t1, t1", "invalid input", "Not unique table/alias: 't1'"},
		{"select x.* from t1", "not found", "Unknown table 'x'"},
		{"select * from (select 1)", "invalid input", "syntax error"},
		{"select a from t1 where sum(a) > 1", "invalid input", "Invalid use of group function"},
		{"select sum(count(a)) from t1", "invalid input", "Invalid use of group function"},
		{"select count(*) from t1 group by 1", "invalid input", "Can't group on 'count(*)'"},
		{"select a from t1 group by 5", "not found", "Unknown column '5' in 'group statement'"},
		{"select a from t1 order by 2", "not found", "Unknown column '2' in 'order clause'"},
		{"select abs(1, 2)", "invalid input", "abs"},
		{"select nosuchfunc(1)", "not found", "nosuchfunc"},
		{"select a from t1 union select a, b from t1", "invalid input", "different number of columns"},
		{"select (select a, b from t1)", "invalid input", "Operand should contain 1 column(s)"},
		{"select distinct a from t1 order by b", "invalid input", "incompatible with DISTINCT"},
		{"select distinct a from t1 order by a + b", "invalid input", "incompatible with DISTINCT"},
		{"select a from t1 limit -1", "invalid input", "Incorrect arguments to LIMIT"},
		{"insert into t1 values (1, 2)", "invalid input", "Column count doesn't match value count at row 1"},
		{"insert into t1 (a, zz) values (1, 2)", "not found", "Unknown column 'zz' in 'field list'"},
		{"insert into t1 (a, a) values (1, 2)", "invalid input", "Column 'a' specified twice"},
		{"insert into nope values (1)", "not found", "Table 'nope' doesn't exist"},
		{"create table t (a int, A int)", "invalid input", "Duplicate column name 'A'"},
		{"create table t (a double precision)", "invalid input", "syntax error"},
		{"insert or replace into t1 values (1, 2, 'x')", "unsupported", "INSERT OR REPLACE"},
		{"insert into t1 values (1, 2, 'x') on duplicate key update a = 1", "unsupported", "ON DUPLICATE KEY UPDATE"},
		{"alter table t1 add column z int", "unsupported", "ALTER"},
		{"create trigger tr after update on t1 for each row begin delete from t1; end", "unsupported", "trigger bodies are not supported"},
		{"select sum(a) over () from t1", "unsupported", "window"},
		{"with recursive x as (select 1) select * from x", "unsupported", "WITH RECURSIVE"},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			_, err := Bind(context.Background(), tt.sql, testCatalog(t), nil)
			if err == nil {
				t.Fatalf("Bind(%q) succeeded, want a %s error", tt.sql, tt.category)
			}
			if got := categoryName(err); got != tt.category {
				t.Errorf("Bind(%q) category = %s, want %s (%v)", tt.sql, got, tt.category, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Bind(%q) error = %q, want it to contain %q", tt.sql, err, tt.msg)
			}
		})
	}
}
