package exec

import "testing"

func TestStringFunctions(t *testing.T) {
	runFuncCases(t, []funcCase{
		{name: "length", args: []arg{{str, `["héllo", "", null]`}}, want: "6,0,NULL", wantT: i64},
		{name: "char_length", args: []arg{{str, `["héllo"]`}}, want: "5", wantT: i64},
		{name: "character_length", args: []arg{{i64, "[-123]"}}, want: "4"},
		{name: "lower", args: []arg{{str, `["AbC"]`}}, want: "abc", wantT: str},
		{name: "ucase", args: []arg{{str, `["AbC"]`}}, want: "ABC"},
		{name: "concat", args: []arg{{str, `["a", "a"]`}, {i64, "[1, null]"}, {dec(3, 1), `["2.5", "1.0"]`}}, want: "a12.5,NULL"},
		{name: "concat_ws", args: []arg{{str, `[",", null]`}, {str, `["a", "a"]`}, {null, "[null, null]"}, {i64, "[3, 3]"}}, want: "a,3,NULL"},
		{name: "substring", args: []arg{{str, `["Quadratically", "Quadratically", "Sakila", "Sakila", "abc"]`}, {i64, "[5, 5, -3, -5, 0]"}}, want: "ratically,ratically,ila,akila,"},
		{name: "substr", args: []arg{{str, `["Quadratically", "Sakila", "héllo", "abc"]`}, {i64, "[5, -5, 2, 2]"}, {i64, "[6, 3, 2, 0]"}}, want: "ratica,aki,él,"},
		{name: "substr", args: []arg{{str, `["abc"]`}, {i64, "[4]"}}, want: ""},
		{name: "left", args: []arg{{str, `["foobar", "foo"]`}, {i64, "[3, -1]"}}, want: "foo,"},
		{name: "right", args: []arg{{str, `["foobar", "ab"]`}, {i64, "[3, 5]"}}, want: "bar,ab"},
		{name: "trim", args: []arg{{str, `["  bar  "]`}}, want: "bar"},
		{name: "trim", args: []arg{{str, `["xxbarxx"]`}, {str, `["x"]`}}, want: "bar"},
		{name: "ltrim", args: []arg{{str, `["  bar  "]`}}, want: "bar  "},
		{name: "rtrim", args: []arg{{str, `["  bar  "]`}}, want: "  bar"},
		{name: "replace", args: []arg{{str, `["www.mysql.com"]`}, {str, `["w"]`}, {str, `["Ww"]`}}, want: "WwWwWw.mysql.com"},
		{name: "reverse", args: []arg{{str, `["abé"]`}}, want: "éba"},
		{name: "repeat", args: []arg{{str, `["ab", "ab"]`}, {i64, "[3, 0]"}}, want: "ababab,"},
		{name: "lpad", args: []arg{{str, `["hi", "hi", "hi"]`}, {i64, "[4, 1, -1]"}, {str, `["??", "?", "?"]`}}, want: "??hi,h,NULL"},
		{name: "rpad", args: []arg{{str, `["hi"]`}, {i64, "[5]"}, {str, `["ab"]`}}, want: "hiaba"},
		{name: "instr", args: []arg{{str, `["foobarbar", "xbar", "foobarbar"]`}, {str, `["bar", "foo", "BAR"]`}}, want: "4,0,0", wantT: i64},
		{name: "locate", args: []arg{{str, `["É", "é"]`}, {str, `["éxÉ", "xÉé"]`}}, want: "3,3", wantT: i64},
		{name: "locate", args: []arg{{str, `["bar", "bar", "xbar"]`}, {str, `["foobarbar", "foobarbar", "foobar"]`}, {i64, "[1, 5, 1]"}}, want: "4,7,0"},
		{name: "strcmp", args: []arg{{str, `["text", "text2", "text", "a", ""]`}, {str, `["text2", "text", "text", "B", ""]`}}, want: "-1,1,0,1,0", wantT: i64},
		{name: "ascii", args: []arg{{str, `["2", "", "dx"]`}}, want: "50,0,100"},
		{name: "hex", args: []arg{{i64, "[255, -1]"}}, want: "FF,FFFFFFFFFFFFFFFF", wantT: str},
		{name: "hex", args: []arg{{str, `["abc"]`}}, want: "616263"},
		{name: "concat", args: []arg{{arrowList(), "[]"}}, errCat: invalid()},
	})
}

func TestTrimAndRegexp(t *testing.T) {
	runFuncCases(t, []funcCase{
		{name: "ltrim", args: []arg{{str, `["xxbarxx"]`}, {str, `["x"]`}}, want: "barxx"},
		{name: "rtrim", args: []arg{{str, `["xxbarxx"]`}, {str, `["xx"]`}}, want: "xxbar"},
		{name: "regexp_like", args: []arg{{str, `["Michael!", "abc", null]`}, {str, `[".*", "^A", "a"]`}}, want: "1,1,NULL", wantT: bln},
		{name: "regexp_like", args: []arg{{str, `["abc"]`}, {str, `["^A"]`}, {str, `["c"]`}}, want: "0"},
		{name: "regexp_like", args: []arg{{str, `["abc"]`}, {str, `["("]`}}, errCat: invalid()},
	})
}
