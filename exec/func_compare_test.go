package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestComparison(t *testing.T) {
	runFuncCases(t, []funcCase{
		{name: "=", args: []arg{{i64, "[1, 2, null]"}, {i64, "[1, 3, 1]"}}, want: "1,0,NULL", wantT: bln},
		{name: "<", args: []arg{{i64, "[1, 2]"}, {dec(3, 1), `["1.5", "1.5"]`}}, want: "1,0"},
		{name: "=", args: []arg{{i64, "[9007199254740993]"}, {dec(20, 1), `["9007199254740992.0"]`}}, want: "0"},
		{name: "=", args: []arg{{i64, "[1, 2]"}, {str, `["1abc", "x"]`}}, want: "1,0"},
		{name: "<>", args: []arg{{f64, "[1.5]"}, {i64, "[1]"}}, want: "1"},
		{name: ">=", args: []arg{{str, `["b", "B", "a"]`}, {str, `["a", "b", "a"]`}}, want: "1,0,1"},
		{name: "<=>", args: []arg{{i64, "[1, null, null]"}, {i64, "[1, 1, null]"}}, want: "1,0,1"},
		{name: "<=>", args: []arg{{null, "[null, null]"}, {i64, "[1, null]"}}, want: "0,1"},
		{name: "=", args: []arg{{null, "[null]"}, {i64, "[1]"}}, want: "NULL", wantT: bln},
		{name: "=", args: []arg{{bln, "[true, false]"}, {i64, "[1, 1]"}}, want: "1,0"},
		// Wider than 38 digits together: compared exactly, not as doubles.
		{name: "=", args: []arg{{dec(38, 2), `["21.35", "21.35"]`}, {dec(8, 6), `["21.350000", "21.350001"]`}}, want: "1,0"},
		{name: "<", args: []arg{{dec(38, 2), `["12345678901234567890123.01"]`}, {dec(30, 7), `["12345678901234567890123.0100001"]`}}, want: "1"},
		{name: ">", args: []arg{{dec(38, 20), `["1.00000000000000000001"]`}, {i64, "[1]"}}, want: "1"},
		{name: "=", args: []arg{{dec(38, 20), `["1.00000000000000000000"]`}, {bln, "[true]"}}, want: "1"},
		{name: "in", args: []arg{{dec(38, 2), `["21.35", "1.00"]`}, {dec(8, 6), `["21.350000", "1.000001"]`}}, want: "1,0"},
		{name: "between", args: []arg{{dec(38, 2), `["21.35"]`}, {dec(8, 6), `["21.350000"]`}, {dec(8, 6), `["21.350001"]`}}, want: "1"},
	})
}

func TestLogic(t *testing.T) {
	tri := arg{bln, "[true, true, true, false, false, false, null, null, null]"}
	other := arg{bln, "[true, false, null, true, false, null, true, false, null]"}
	runFuncCases(t, []funcCase{
		{name: "and", args: []arg{tri, other}, want: "1,0,NULL,0,0,0,NULL,0,NULL", wantT: bln},
		{name: "or", args: []arg{tri, other}, want: "1,1,1,1,0,NULL,1,NULL,NULL"},
		{name: "xor", args: []arg{tri, other}, want: "0,1,NULL,1,0,NULL,NULL,NULL,NULL"},
		{name: "not", args: []arg{{bln, "[true, false, null]"}}, want: "0,1,NULL"},
		{name: "not", args: []arg{{i64, "[5, 0, null]"}}, want: "0,1,NULL"},
		{name: "and", args: []arg{{i64, "[2, 0]"}, {f64, "[0.5, 1]"}}, want: "1,0"},
		{name: "is_null", args: []arg{{i64, "[1, null]"}}, want: "0,1"},
		{name: "is_not_null", args: []arg{{null, "[null]"}}, want: "0"},
		{name: "is_true", args: []arg{{i64, "[1, 0, null]"}}, want: "1,0,0"},
		{name: "is_false", args: []arg{{i64, "[1, 0, null]"}}, want: "0,1,0"},
		{name: "is_not_true", args: []arg{{i64, "[1, 0, null]"}}, want: "0,1,1"},
		{name: "is_not_false", args: []arg{{i64, "[1, 0, null]"}}, want: "1,0,1"},
	})
}

func TestInBetweenLike(t *testing.T) {
	runFuncCases(t, []funcCase{
		{name: "in", args: []arg{{i64, "[1, 2, 3, null]"}, {i64, "[1, 1, 1, 1]"}, {i64, "[2, null, 5, 1]"}}, want: "1,NULL,0,NULL", wantT: bln},
		{name: "in", args: []arg{{i64, "[1, 2]"}, {dec(3, 1), `["1.0", "2.5"]`}}, want: "1,0"},
		{name: "in", args: []arg{{str, `["a", "b"]`}, {str, `["a", "c"]`}, {null, "[null, null]"}}, want: "1,NULL"},
		{name: "between", args: []arg{{i64, "[1, 5, 10, null, 5]"}, {i64, "[2, 2, 2, 2, null]"}, {i64, "[8, 8, 8, 8, 4]"}}, want: "0,1,0,NULL,0"},
		{name: "between", args: []arg{{i64, "[5]"}, {null, "[null]"}, {i64, "[8]"}}, want: "NULL"},
		{name: "like", args: []arg{{str, `["abc", "ABC", "abd", "a", null, "a%c", "axc", "Abc"]`}, {str, `["a%c", "a_c", "a%c", "a%", "a", "a\\%c", "a\\%c", "a%"]`}}, want: "1,0,0,1,NULL,1,0,0"},
		{name: "like", args: []arg{{str, `["", "x", "hello world", "mississippi"]`}, {str, `["%", "", "%o w%", "%iss%ppi"]`}}, want: "1,0,1,1"},
		{name: "like", args: []arg{{i64, "[123, 45]"}, {str, `["1%", "_"]`}}, want: "1,0"},
		{name: "like", args: []arg{{str, `["a|%b"]`}, {str, `["a||%%"]`}, {str, `["|"]`}}, want: "1"},
		{name: "&", args: []arg{{i64, "[12, null]"}, {i64, "[10, 1]"}}, want: "8,NULL"},
		{name: "|", args: []arg{{i64, "[12]"}, {i64, "[3]"}}, want: "15"},
		{name: "^", args: []arg{{i64, "[12]"}, {i64, "[10]"}}, want: "6"},
		{name: "<<", args: []arg{{i64, "[1, 1]"}, {i64, "[4, 64]"}}, want: "16,0"},
		{name: ">>", args: []arg{{i64, "[-1]"}, {i64, "[60]"}}, want: "15"},
		{name: "~", args: []arg{{i64, "[0]"}}, want: "-1"},
	})
}

func TestCompareTemporal(t *testing.T) {
	date := arrow.FixedWidthTypes.Date32
	runFuncCases(t, []funcCase{
		{name: "<", args: []arg{{date, "[19724, 19724]"}, {str, `["2024-02-01", "2023-01-01"]`}}, want: "1,0"},
		{name: "=", args: []arg{{date, "[19724]"}, {&arrow.TimestampType{Unit: arrow.Microsecond}, `[1704153600000000]`}}, want: "1"},
		{name: "=", args: []arg{{date, "[19724, 19724]"}, {i64, "[1, 20240102]"}}, want: "0,1"},
		{name: "=", args: []arg{{date, "[19724, 19724, 19724]"}, {str, `["20240102", "2024-1-2", "2024-01-02 00:00:00"]`}}, want: "1,1,1"},
		{name: ">", args: []arg{{arrow.FixedWidthTypes.Time64us, "[43200000001, 43200000000, 3600000000]"}, {str, `["12:00:00", "12:00:00", "12:00:00"]`}}, want: "1,0,0"},
	})
}

func TestCompareWideDecimal(t *testing.T) {
	runFuncCases(t, []funcCase{
		// int64 next to DECIMAL(38,30) would need 49 digits: compared as doubles, not clamped.
		{name: ">", args: []arg{{i64, "[10000000000, 1]"}, {dec(38, 30), `["1.5", "1.5"]`}}, want: "1,0"},
	})
}
