package sql

import (
	"strings"
	"testing"

	"github.com/cachedb/cachedb/planner"
)

// Every NOW()-like function of one statement binds to the same instant, as a literal.
func TestStatementTimeIsFixedPerStatement(t *testing.T) {
	q := bindStatement(t, "select now(6), sysdate(6), current_timestamp(6), utc_timestamp(6), curdate(), curtime(6), unix_timestamp()", nil).(*planner.Query)
	exprs := q.Plan.(*planner.Project).Exprs
	var vals []string
	for _, e := range exprs {
		lit, ok := e.(*planner.Literal)
		if !ok {
			t.Fatalf("%s bound to %T, want a literal", e, e)
		}
		vals = append(vals, lit.String())
	}
	for _, v := range vals[1:4] {
		if v != vals[0] {
			t.Errorf("timestamps of one statement differ: %v", vals)
		}
	}
	if !strings.HasPrefix(vals[0], vals[4]) || !strings.HasSuffix(vals[0], vals[5]) {
		t.Errorf("CURDATE %s and CURTIME %s are not the date and time of NOW %s", vals[4], vals[5], vals[0])
	}
	if got := q.Plan.(*planner.Project).Exprs[0].Type().String(); got != "timestamp[us]" {
		t.Errorf("NOW() type %s", got)
	}
}

// Interval syntax binds to one function per unit, its operands in (date, interval) order.
func TestIntervalSyntaxBinding(t *testing.T) {
	tests := []struct{ sql, want, typ string }{
		{"date '2020-01-31' + interval 1 month", "date_add_month(2020-01-31, 1)", "date32"},
		{"interval 1 day + date '2020-01-31'", "date_add_day(2020-01-31, 1)", "date32"},
		{"date '2020-01-31' - interval '1:30' hour_minute", "date_sub_hour_minute(2020-01-31, '1:30')", "timestamp[us]"},
		{"date_sub('2020-01-31', interval 1 day)", "date_sub_day('2020-01-31', 1)", "utf8"},
		{"adddate(date '2020-01-31', 3)", "date_add_day(2020-01-31, 3)", "date32"},
		{"timestampadd(week, 2, date '2020-01-31')", "date_add_week(2020-01-31, 2)", "date32"},
		{"extract(year_month from date '2020-01-31')", "extract_year_month(2020-01-31)", "int64"},
		{"timestampdiff(month, date '2020-01-31', date '2020-03-01')", "timestampdiff_month(2020-01-31, 2020-03-01)", "int64"},
		{"str_to_date('1/2/2020', '%m/%d/%Y')", "str_to_date_date('1/2/2020', '%m/%d/%Y')", "date32"},
		{"str_to_date('10:11', '%H:%i')", "str_to_date_time('10:11', '%H:%i')", "time64[us]"},
		{"date '2020-01-31' < '2020-02-01 10:00'", "(2020-01-31 < 2020-02-01 10:00:00)", "bool"},
		{"time '10:00:00' + interval 1 hour", "date_add_hour(10:00:00, 1)", "time64[us]"},
	}
	for _, tt := range tests {
		e := selectExpr(t, "select "+tt.sql)
		if got := e.String(); got != tt.want {
			t.Errorf("%s bound to %s, want %s", tt.sql, got, tt.want)
		}
		if got := e.Type().String(); got != tt.typ {
			t.Errorf("%s: type %s, want %s", tt.sql, got, tt.typ)
		}
	}
}
