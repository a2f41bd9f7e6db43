package exec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/internal/errs"
)

// Counts a client may send to make a size computation overflow: 2^61 and 2^62 times a short
// string's length wrap around int64, and math.MaxInt64.
const (
	huge61 = "2305843009213693952"
	huge62 = "4611686018427387904"
	maxI64 = "9223372036854775807"
	minI64 = "-9223372036854775808"
)

func TestStringFunctionsWithHugeCounts(t *testing.T) {
	counts := "[" + strings.Join([]string{huge61, huge62, maxI64, minI64, "-1", "67108865"}, ",") + "]"
	six := func(s string) string { return `["` + strings.Repeat(s+`","`, 5) + s + `"]` }
	exhausted := errs.ResourceExhausted
	runFuncCases(t, []funcCase{
		// MySQL: past max_allowed_packet the result is NULL; a negative count gives ''.
		{name: "repeat", args: []arg{{str, six("city")}, {i64, counts}}, want: "NULL,NULL,NULL,,,NULL"},
		{name: "repeat", args: []arg{{str, six("x")}, {i64, counts}}, want: "NULL,NULL,NULL,,,NULL"},
		{name: "space", args: []arg{{i64, counts}}, want: "NULL,NULL,NULL,,,NULL", wantT: str},
		{name: "space", args: []arg{{i64, "[3, 0]"}}, want: "   ,"},
		// LPAD / RPAD: a negative length is NULL in MySQL.
		{name: "lpad", args: []arg{{str, six("city")}, {i64, counts}, {str, six("y")}}, want: "NULL,NULL,NULL,NULL,NULL,NULL"},
		{name: "rpad", args: []arg{{str, six("é")}, {i64, counts}, {str, six("ab")}}, want: "NULL,NULL,NULL,NULL,NULL,NULL"},
		{name: "rpad", args: []arg{{str, `["abc"]`}, {i64, "[" + maxI64 + "]"}, {str, `[""]`}}, want: "NULL"},
		{name: "substring", args: []arg{{str, `["abc", "abc", "abc"]`}, {i64, "[" + minI64 + ", " + maxI64 + ", -3]"}}, want: ",,abc"},
		{name: "substr", args: []arg{{str, `["abc", "abc"]`}, {i64, "[2, 2]"}, {i64, "[" + maxI64 + ", " + minI64 + "]"}}, want: "bc,"},
		{name: "left", args: []arg{{str, `["abc", "abc"]`}, {i64, "[" + maxI64 + ", " + minI64 + "]"}}, want: "abc,"},
		{name: "right", args: []arg{{str, `["abc", "abc"]`}, {i64, "[" + maxI64 + ", " + minI64 + "]"}}, want: "abc,"},
		{name: "locate", args: []arg{{str, `["b", "b"]`}, {str, `["abc", "abc"]`}, {i64, "[" + maxI64 + ", " + minI64 + "]"}}, want: "0,0"},
		{name: "truncate", args: []arg{{i64, "[123, 123]"}, {i64, "[" + minI64 + ", -19]"}}, want: "0,0"},
		{name: "round", args: []arg{{i64, "[123, 153]"}, {i64, "[" + minI64 + ", -2]"}}, want: "0,200"},
		{name: "round", args: []arg{{dec(10, 2), `["1.25", "1.25"]`}, {i64, "[" + minI64 + ", " + maxI64 + "]"}}, want: "0.00,1.25"},
		{name: "truncate", args: []arg{{dec(10, 2), `["1.25"]`}, {i64, "[" + minI64 + "]"}}, want: "0.00"},
		// Results beyond one batch's limit fail the statement instead of growing the process.
		{name: "repeat", args: []arg{{str, rowsOf(300, `"x"`)}, {i64, rowsOf(300, "1000000")}}, errCat: &exhausted},
		{name: "rpad", args: []arg{{str, rowsOf(300, `"x"`)}, {i64, rowsOf(300, "1000000")}, {str, rowsOf(300, `"y"`)}}, errCat: &exhausted},
	})
}

// rowsOf is a JSON array of n copies of v.
func rowsOf(n int, v string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(v+",", n), ",") + "]"
}

// Results up to max_allowed_packet come back whole, whatever their size in characters times 4.
func TestStringResultsUpToMaxAllowedPacket(t *testing.T) {
	mem := newMem(t)
	defer mem.AssertSize(t, 0)
	for _, c := range []struct {
		name string
		args []arg
		want int
	}{
		{"rpad", []arg{{str, `["x"]`}, {i64, "[60000000]"}, {str, `["y"]`}}, 60000000},
		{"lpad", []arg{{str, `["x"]`}, {i64, fmt.Sprint("[", maxStringResult, "]")}, {str, `["yz"]`}}, maxStringResult},
		{"repeat", []arg{{str, `["ab"]`}, {i64, fmt.Sprint("[", maxStringResult/2, "]")}}, maxStringResult},
	} {
		_, got, err := callFunc(t, mem, c.name, c.args...)
		if err != nil || len(got) != c.want {
			t.Errorf("%s: %d bytes, %v; want %d bytes", c.name, len(got), err, c.want)
		}
	}
	_, got, err := callFunc(t, mem, "repeat", arg{str, `["ab"]`}, arg{i64, fmt.Sprint("[", maxStringResult/2+1, "]")})
	if err != nil || got != "NULL" {
		t.Errorf("repeat past max_allowed_packet = %.10q, %v; want NULL", got, err)
	}
}

func TestConcatAndReplacePastMaxAllowedPacket(t *testing.T) {
	big := `"` + strings.Repeat("a", maxStringResult/2+1) + `"`
	runFuncCases(t, []funcCase{
		{name: "concat", args: []arg{{str, "[" + big + "]"}, {str, "[" + big + "]"}}, want: "NULL"},
		{name: "concat_ws", args: []arg{{str, `[","]`}, {str, "[" + big + "]"}, {str, "[" + big + "]"}}, want: "NULL"},
		{name: "replace", args: []arg{{str, "[" + big + "]"}, {str, `["a"]`}, {str, `["bb"]`}}, want: "NULL"},
	})
}

func TestGroupConcatCutsAtMaxAllowedPacket(t *testing.T) {
	if got := string(cutUTF8([]byte("abé"), 3)); got != "ab" {
		t.Errorf("cutUTF8 inside é = %q, want %q", got, "ab")
	}
	if got := string(cutUTF8([]byte("abé"), 4)); got != "abé" {
		t.Errorf("cutUTF8 after é = %q, want %q", got, "abé")
	}
}

func TestBroadcastOfLongConstantIsBounded(t *testing.T) {
	mem := newMem(t)
	defer mem.AssertSize(t, 0)
	long := scalar.NewStringScalar(strings.Repeat("x", 1000000))
	if _, err := BroadcastScalar(mem, long, 8192); errs.CategoryOf(err) != errs.ResourceExhausted {
		t.Fatalf("broadcasting 1 MB to 8192 rows: %v, want a ResourceExhausted error", err)
	}
	a, err := BroadcastScalar(mem, long, 60)
	if err != nil {
		t.Fatalf("broadcasting 1 MB to 60 rows: %v", err)
	}
	a.Release()
}
