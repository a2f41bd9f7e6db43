package exec

import "testing"

func TestNullFunctions(t *testing.T) {
	runFuncCases(t, []funcCase{
		{name: "coalesce", args: []arg{{i64, "[null, 1, null]"}, {i64, "[2, 3, null]"}}, want: "2,1,NULL", wantT: i64},
		{name: "coalesce", args: []arg{{null, "[null, null]"}, {i64, "[1, null]"}, {dec(3, 1), `["2.5", "3.5"]`}}, want: "1.0,3.5", wantT: dec(20, 1)},
		{name: "coalesce", args: []arg{{null, "[null]"}}, want: "NULL", wantT: null},
		{name: "coalesce", args: []arg{{i64, "[null, 7]"}, {str, `["x", "y"]`}}, want: "x,7", wantT: str},
		{name: "ifnull", args: []arg{{f64, "[null, 1.5]"}, {i64, "[2, 3]"}}, want: "2,1.5", wantT: f64},
		{name: "ifnull", args: []arg{{i64, "[1]"}}, errCat: invalid()},
		{name: "nullif", args: []arg{{i64, "[1, 2, null]"}, {i64, "[1, 3, 1]"}}, want: "NULL,2,NULL", wantT: i64},
		{name: "nullif", args: []arg{{i64, "[1, 2]"}, {null, "[null, null]"}}, want: "1,2", wantT: i64},
		{name: "nullif", args: []arg{{str, `["a", "b"]`}, {str, `["a", "a"]`}}, want: "NULL,b", wantT: str},
		{name: "if", args: []arg{{bln, "[true, false, null]"}, {i64, "[1, 2, 3]"}, {str, `["a", "b", "c"]`}}, want: "1,b,c", wantT: str},
		{name: "if", args: []arg{{i64, "[5, 0]"}, {i64, "[1, 2]"}, {null, "[null, null]"}}, want: "1,NULL", wantT: i64},
		{name: "greatest", args: []arg{{i64, "[1, 5, null]"}, {dec(3, 1), `["2.5", "1.0", "1.0"]`}}, want: "2.5,5.0,NULL", wantT: dec(20, 1)},
		{name: "least", args: []arg{{i64, "[1, 5]"}, {i64, "[2, 3]"}, {i64, "[0, 4]"}}, want: "0,3", wantT: i64},
		{name: "greatest", args: []arg{{str, `["apple", "b"]`}, {str, `["banana", "a"]`}}, want: "banana,b"},
	})
}
