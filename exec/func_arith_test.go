package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cachedb/cachedb/internal/errs"
)

// funcCase is one table row: call name(args...) and expect type and rendered values, or an error
// of category errCat.
type funcCase struct {
	name   string
	args   []arg
	want   string
	wantT  arrow.DataType
	errCat *errs.Category
}

func invalid() *errs.Category { c := errs.InvalidInput; return &c }

func runFuncCases(t *testing.T, cases []funcCase) {
	t.Helper()
	for _, c := range cases {
		mem := newMem(t)
		gotT, got, err := callFunc(t, mem, c.name, c.args...)
		label := c.name
		for _, a := range c.args {
			label += " " + a.t.String() + a.js
		}
		switch {
		case c.errCat != nil:
			if err == nil || errs.CategoryOf(err) != *c.errCat {
				t.Errorf("%s: want %v error, got %v (%q)", label, *c.errCat, err, got)
			}
		case err != nil:
			t.Errorf("%s: %v", label, err)
		default:
			if got != c.want {
				t.Errorf("%s = %q, want %q", label, got, c.want)
			}
			if c.wantT != nil && !arrow.TypeEqual(gotT, c.wantT) {
				t.Errorf("%s: type %s, want %s", label, gotT, c.wantT)
			}
		}
		mem.AssertSize(t, 0)
	}
}

func TestArithmetic(t *testing.T) {
	runFuncCases(t, []funcCase{
		{name: "+", args: []arg{{i64, "[1, null, -5]"}, {i64, "[2, 3, 5]"}}, want: "3,NULL,0", wantT: i64},
		{name: "+", args: []arg{{i64, "[9223372036854775807]"}, {i64, "[1]"}}, errCat: invalid()},
		{name: "-", args: []arg{{i64, "[-9223372036854775808]"}, {i64, "[1]"}}, errCat: invalid()},
		{name: "*", args: []arg{{i64, "[4294967296]"}, {i64, "[4294967296]"}}, errCat: invalid()},
		{name: "*", args: []arg{{i64, "[-3, 7]"}, {i64, "[4, 0]"}}, want: "-12,0", wantT: i64},
		{name: "+", args: []arg{{i64, "[1]"}, {f64, "[0.5]"}}, want: "1.5", wantT: f64},
		{name: "+", args: []arg{{i64, "[1]"}, {str, `["2.5abc"]`}}, want: "3.5", wantT: f64},
		{name: "+", args: []arg{{bln, "[true]"}, {i64, "[1]"}}, want: "2", wantT: i64},
		{name: "+", args: []arg{{null, "[null, null]"}, {i64, "[1, 2]"}}, want: "NULL,NULL", wantT: i64},
		{name: "+", args: []arg{{dec(5, 2), `["1.25"]`}, {i64, "[2]"}}, want: "3.25", wantT: dec(22, 2)},
		{name: "-", args: []arg{{dec(5, 2), `["1.25"]`}, {dec(4, 3), `["0.125"]`}}, want: "1.125", wantT: dec(7, 3)},
		{name: "*", args: []arg{{dec(5, 2), `["1.25"]`}, {dec(4, 1), `["-0.5"]`}}, want: "-0.625", wantT: dec(9, 3)},
		{name: "/", args: []arg{{i64, "[1, 2, 7, null, -7]"}, {i64, "[3, 0, 2, 1, 2]"}}, want: "0.3333,NULL,3.5000,NULL,-3.5000", wantT: dec(23, 4)},
		{name: "/", args: []arg{{i64, "[2]"}, {i64, "[3]"}}, want: "0.6667"},
		{name: "/", args: []arg{{dec(4, 2), `["1.00"]`}, {i64, "[3]"}}, want: "0.333333", wantT: dec(8, 6)},
		{name: "/", args: []arg{{f64, "[1]"}, {i64, "[4]"}}, want: "0.25", wantT: f64},
		{name: "/", args: []arg{{f64, "[1]"}, {i64, "[0]"}}, want: "NULL"},
		{name: "div", args: []arg{{i64, "[7, -7, 7]"}, {i64, "[2, 2, 0]"}}, want: "3,-3,NULL", wantT: i64},
		{name: "div", args: []arg{{dec(3, 1), `["5.5"]`}, {i64, "[2]"}}, want: "2", wantT: i64},
		{name: "div", args: []arg{{f64, "[-7.5]"}, {i64, "[2]"}}, want: "-3", wantT: i64},
		{name: "%", args: []arg{{i64, "[7, -7, 7]"}, {i64, "[3, 3, 0]"}}, want: "1,-1,NULL", wantT: i64},
		{name: "%", args: []arg{{dec(3, 1), `["5.5"]`}, {i64, "[2]"}}, want: "1.5"},
		{name: "%", args: []arg{{f64, "[5.5]"}, {i64, "[2]"}}, want: "1.5", wantT: f64},
		{name: "neg", args: []arg{{i64, "[5, null]"}}, want: "-5,NULL", wantT: i64},
		{name: "neg", args: []arg{{i64, "[-9223372036854775808]"}}, errCat: invalid()},
		{name: "neg", args: []arg{{dec(3, 1), `["5.5"]`}}, want: "-5.5", wantT: dec(3, 1)},
		{name: "neg", args: []arg{{str, `["2"]`}}, want: "-2", wantT: f64},
		{name: "+", args: []arg{{i64, "[1]"}}, errCat: invalid()},
	})
}

func TestDecimalArithmeticEdges(t *testing.T) {
	big := `["99999999999999999999999999999999999999"]`
	runFuncCases(t, []funcCase{
		{name: "/", args: []arg{{i64, "[1, -1, -2]"}, {i64, "[6, 6, 3]"}}, want: "0.1667,-0.1667,-0.6667"},
		{name: "/", args: []arg{{dec(10, 2), `["-1.00"]`}, {dec(10, 3), `["0.003"]`}}, want: "-333.333333"},
		{name: "/", args: []arg{{dec(38, 0), big}, {dec(3, 2), `["0.01"]`}}, errCat: invalid()},
		{name: "*", args: []arg{{dec(38, 0), big}, {i64, "[10]"}}, errCat: invalid()},
		{name: "+", args: []arg{{dec(38, 0), big}, {i64, "[1]"}}, errCat: invalid()},
		{name: "*", args: []arg{{dec(20, 10), `["1234567890.0123456789"]`}, {dec(20, 10), `["2.0000000000"]`}}, want: "2469135780.02469135780000000000", wantT: dec(38, 20)},
		{name: "-", args: []arg{{dec(5, 2), `["-1.25"]`}, {dec(5, 2), `["1.25"]`}}, want: "-2.50"},
		{name: "div", args: []arg{{i64, "[-9223372036854775808]"}, {i64, "[-1]"}}, errCat: invalid()},
		{name: "%", args: []arg{{dec(5, 2), `["-7.50"]`}, {dec(3, 1), `["2.0"]`}}, want: "-1.50"},
		{name: "+", args: []arg{{f64, "[1e308]"}, {f64, "[1e308]"}}, errCat: invalid()},
		{name: "+", args: []arg{{arrowList(), "[]"}, {i64, "[]"}}, errCat: invalid()},
	})
}
