package exec

import "testing"

func TestMathFunctions(t *testing.T) {
	runFuncCases(t, []funcCase{
		{name: "abs", args: []arg{{i64, "[-3, 4, null]"}}, want: "3,4,NULL", wantT: i64},
		{name: "abs", args: []arg{{i64, "[-9223372036854775808]"}}, errCat: invalid()},
		{name: "abs", args: []arg{{dec(4, 2), `["-1.25"]`}}, want: "1.25", wantT: dec(4, 2)},
		{name: "abs", args: []arg{{f64, "[-1.5]"}}, want: "1.5", wantT: f64},
		{name: "abs", args: []arg{{str, `["-2x"]`}}, want: "2", wantT: f64},
		{name: "abs", args: []arg{{null, "[null]"}}, want: "NULL", wantT: i64},
		{name: "sign", args: []arg{{dec(4, 2), `["-1.25", "0.00", "3.00"]`}}, want: "-1,0,1", wantT: i64},
		{name: "ceil", args: []arg{{dec(4, 2), `["1.25", "-1.25", "2.00"]`}}, want: "2,-1,2", wantT: dec(3, 0)},
		{name: "floor", args: []arg{{dec(4, 2), `["1.25", "-1.25"]`}}, want: "1,-2"},
		{name: "ceiling", args: []arg{{f64, "[1.1]"}}, want: "2", wantT: f64},
		{name: "floor", args: []arg{{i64, "[7]"}}, want: "7", wantT: i64},
		{name: "round", args: []arg{{dec(4, 2), `["1.25", "-1.50", "0.49"]`}}, want: "1,-2,0", wantT: dec(3, 0)},
		{name: "round", args: []arg{{dec(6, 3), `["1.235", "-1.235"]`}, {i64, "[2, 2]"}}, want: "1.240,-1.240", wantT: dec(7, 3)},
		{name: "round", args: []arg{{dec(6, 3), `["125.000"]`}, {i64, "[-1]"}}, want: "130.000"},
		{name: "round", args: []arg{{i64, "[15, -15, 14, 7]"}, {i64, "[-1, -1, -1, 2]"}}, want: "20,-20,10,7", wantT: i64},
		{name: "round", args: []arg{{f64, "[2.5, 3.5, 1.2345]"}, {i64, "[0, 0, 2]"}}, want: "2,4,1.23", wantT: f64},
		{name: "round", args: []arg{{f64, "[1.5]"}, {null, "[null]"}}, want: "NULL"},
		{name: "truncate", args: []arg{{dec(6, 3), `["1.239", "-1.239"]`}, {i64, "[2, 2]"}}, want: "1.230,-1.230", wantT: dec(6, 3)},
		{name: "truncate", args: []arg{{f64, "[1.239, -1.239]"}, {i64, "[1, 1]"}}, want: "1.2,-1.2"},
		{name: "truncate", args: []arg{{i64, "[1239]"}, {i64, "[-2]"}}, want: "1200"},
		{name: "round", args: []arg{{i64, "[15, -15]"}, {i64, "[-9223372036854775808, -9223372036854775807]"}}, want: "0,0", wantT: i64},
		{name: "truncate", args: []arg{{i64, "[15]"}, {i64, "[-9223372036854775808]"}}, want: "0"},
		{name: "round", args: []arg{{dec(6, 3), `["1.235", "-1.235"]`}, {i64, "[-9223372036854775808, -9223372036854775807]"}}, want: "0.000,0.000"},
		{name: "truncate", args: []arg{{dec(6, 3), `["1.235"]`}, {i64, "[-9223372036854775808]"}}, want: "0.000"},
		{name: "mod", args: []arg{{i64, "[7]"}, {i64, "[-3]"}}, want: "1"},
		{name: "sqrt", args: []arg{{i64, "[4, -1, null]"}}, want: "2,NULL,NULL", wantT: f64},
		{name: "power", args: []arg{{i64, "[2]"}, {i64, "[10]"}}, want: "1024", wantT: f64},
		{name: "pow", args: []arg{{i64, "[10]"}, {i64, "[400]"}}, errCat: invalid()},
		{name: "ln", args: []arg{{i64, "[1, 0]"}}, want: "0,NULL"},
		{name: "log", args: []arg{{i64, "[2, 1]"}, {i64, "[8, 8]"}}, want: "3,NULL"},
		{name: "log10", args: []arg{{i64, "[1000]"}}, want: "3"},
		{name: "log2", args: []arg{{i64, "[8]"}}, want: "3"},
		{name: "exp", args: []arg{{i64, "[0]"}}, want: "1"},
		{name: "cos", args: []arg{{i64, "[0]"}}, want: "1"},
		{name: "sin", args: []arg{{i64, "[0]"}}, want: "0"},
		{name: "tan", args: []arg{{i64, "[0]"}}, want: "0"},
	})
}
