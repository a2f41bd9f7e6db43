package sql

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/planner"
)

// TestLiteralTypes checks how constants are typed (docs/architecture.md).
func TestLiteralTypes(t *testing.T) {
	tests := []struct {
		sql, value, typ string
	}{
		{"1", "1", "int64"},
		{"-1", "-1", "int64"},
		{"- 1", "-1", "int64"},
		{"-9223372036854775808", "-9223372036854775808", "int64"},
		{"9223372036854775808", "9223372036854775808", "decimal(19, 0)"},
		{"1.50", "1.5", "decimal(3, 2)"},
		{".5", "0.5", "decimal(1, 1)"},
		{"-0.05", "-0.05", "decimal(2, 2)"},
		{"1e3", "1000", "float64"},
		{"'x'", "'x'", "utf8"},
		{"true", "true", "bool"},
		{"null", "NULL", "null"},
		{"0x41", "65", "int64"},
		{"x'41'", "'A'", "utf8"},
		{"date '2020-01-02'", "2020-01-02", "date32"},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			e := selectExpr(t, "select "+tt.sql)
			lit, ok := e.(*planner.Literal)
			if !ok {
				t.Fatalf("select %s bound to %T %s, want a literal", tt.sql, e, e)
			}
			if got := lit.String(); got != tt.value {
				t.Errorf("value = %s, want %s", got, tt.value)
			}
			if got := lit.Type().String(); got != tt.typ {
				t.Errorf("type = %s, want %s", got, tt.typ)
			}
		})
	}
}

// TestParams checks ? placeholders: planner.Param without values, literals with them.
func TestParams(t *testing.T) {
	q := bindStatement(t, "select a from t1 where a = ? and b = ?", nil).(*planner.Query)
	if q.NumParams != 2 {
		t.Errorf("NumParams = %d, want 2", q.NumParams)
	}
	filter := q.Plan.(*planner.Project).Input.(*planner.Filter)
	if got, want := filter.Cond.String(), "((a#1 = ?1) and (b#2 = ?2))"; got != want {
		t.Errorf("condition = %s, want %s", got, want)
	}
	q = bindStatement(t, "select ? + 1", []scalarValue{int64Scalar(41)}).(*planner.Query)
	if got, want := q.Plan.(*planner.Project).Exprs[0].String(), "(41 + 1)"; got != want {
		t.Errorf("bound parameter = %s, want %s", got, want)
	}
}

// TestLimitParams checks LIMIT ? OFFSET ?: unknown when preparing, the values when bound.
func TestLimitParams(t *testing.T) {
	q := bindStatement(t, "select a from t1 limit ? offset ?", nil).(*planner.Query)
	if l := q.Plan.(*planner.Limit); l.Count != -1 || l.Offset != 0 || q.NumParams != 2 {
		t.Errorf("prepared limit = %+v, NumParams %d", l, q.NumParams)
	}
	q = bindStatement(t, "select a from t1 limit ? offset ?", []scalarValue{int64Scalar(5), int64Scalar(2)}).(*planner.Query)
	if l := q.Plan.(*planner.Limit); l.Count != 5 || l.Offset != 2 {
		t.Errorf("bound limit = %+v", l)
	}
	q = bindStatement(t, "select a from t1 limit ? offset ?", []scalarValue{scalar.NewUint64Scalar(math.MaxUint64), int64Scalar(1)}).(*planner.Query)
	if l := q.Plan.(*planner.Limit); l.Count != math.MaxInt64 || l.Offset != 1 {
		t.Errorf("limit bound to an unsigned 2^64-1 = %+v, want all rows", l)
	}
}

// TestUnsignedLimits checks that LIMIT and OFFSET take any unsigned BIGINT, as MySQL does: past
// int64 they mean all rows (or skip them all).
func TestUnsignedLimits(t *testing.T) {
	for _, c := range []struct {
		sql           string
		count, offset int64
	}{
		{"select a from t1 limit 18446744073709551615", math.MaxInt64, 0},
		{"select a from t1 limit 9223372036854775808 offset 18446744073709551615", math.MaxInt64, math.MaxInt64},
		{"select a from t1 limit 9223372036854775807", math.MaxInt64, 0},
		{"select a from t1 limit 3, 18446744073709551615", math.MaxInt64, 3},
	} {
		l := bindStatement(t, c.sql, nil).(*planner.Query).Plan.(*planner.Limit)
		if l.Count != c.count || l.Offset != c.offset {
			t.Errorf("%s: count %d offset %d, want %d %d", c.sql, l.Count, l.Offset, c.count, c.offset)
		}
	}
	for _, bad := range []string{"select a from t1 limit 18446744073709551616", "select a from t1 limit 1.5", "select a from t1 limit -1"} {
		if _, err := bindErr(t, bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestStringLiteralsMustBeUTF8(t *testing.T) {
	_, err := bindErr(t, "select 'a\xffb'")
	if err == nil || err.Error() != "Invalid utf8mb4 character string: 'FF62' in a string literal" {
		t.Errorf("literal with an invalid byte: %v", err)
	}
	if _, err := bindErr(t, "select 'héllo'"); err != nil {
		t.Errorf("valid literal: %v", err)
	}
}
