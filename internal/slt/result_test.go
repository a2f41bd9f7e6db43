package slt

import (
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"
)

func TestHashValuesKnownCorpusHashes(t *testing.T) {
	// random/groupby/slt_good_6.test: `SELECT 81 AS col0 FROM tab1 cor0 CROSS JOIN tab1 AS cor1
	// GROUP BY cor0.col1, cor1.col1` gives nine rows of 81.
	nine81 := strings.Split(strings.Repeat("81,", 9), ",")[:9]
	if got, want := HashValues(nine81), "7a8ea30c6803aeddc5fca5b5821d8267"; got != want {
		t.Errorf("hash of nine 81s = %s, want %s", got, want)
	}

	// select1.test line 109, `query IIIRI nosort`: the fourth column is (a+b+c+d+e)/5, a
	// DECIMAL in MySQL, written in an I column as %.3f. The rows below are the query's result.
	rows := [][5]int{
		{1680, 222, 1, 112, 674}, {1826, 222, 1, 122, 738}, {1902, 222, 4, 127, 760},
		{1985, 333, 4, 132, 793}, {2046, 222, 2, 137, 827}, {2202, 444, 2, 147, 880},
		{2281, 333, 1, 152, 905}, {2432, 444, 1, 162, 966}, {2501, 333, 1, 167, 1000},
		{2654, 444, 1, 177, 1057}, {2728, 333, 3, 182, 1096}, {3175, 333, 3, 212, 1277},
		{3331, 222, 1, 222, 1338}, {3473, 333, 1, 232, 1391}, {3553, 444, 1, 237, 1416},
		{3706, 111, 2, 247, 1484},
	}
	var values []string
	for _, r := range rows {
		d := sqlValue{kind: kindDecimal, dec: big.NewInt(int64(r[3]) * 10000), scale: 4}
		values = append(values, fmt.Sprint(r[0]), fmt.Sprint(r[1]), fmt.Sprint(r[2]), formatInteger(d), fmt.Sprint(r[4]))
	}
	if got, want := HashValues(values), "d521bd8b9808333cf03a5a59692a240b"; got != want {
		t.Errorf("select1.test:109 hash = %s, want %s", got, want)
	}
}

func TestResultValues(t *testing.T) {
	res := Result{Columns: 2, Rows: [][]string{{"b", "2"}, {"a", "9"}, {"b", "10"}, {"NULL", "1"}}}
	tests := []struct {
		mode SortMode
		want []string
	}{
		{NoSort, []string{"b", "2", "a", "9", "b", "10", "NULL", "1"}},
		{RowSort, []string{"NULL", "1", "a", "9", "b", "10", "b", "2"}},
		{ValueSort, []string{"1", "10", "2", "9", "NULL", "a", "b", "b"}},
	}
	for _, tt := range tests {
		if got := res.Values(tt.mode); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.mode, got, tt.want)
		}
	}
	if res.Rows[0][0] != "b" {
		t.Error("rowsort reordered the caller's rows")
	}
}

func TestCheck(t *testing.T) {
	res := Result{Columns: 2, Rows: [][]string{{"1", "x"}, {"2", "y"}}}
	values := res.Values(NoSort)
	tests := []struct {
		name  string
		rec   Record
		match bool
	}{
		{"value per line", Record{Expected: []string{"1", "x", "2", "y"}}, true},
		{"row per line", Record{Expected: []string{"1 x", "2 y"}}, true},
		{"wrong value", Record{Expected: []string{"1", "x", "2", "z"}}, false},
		{"missing value", Record{Expected: []string{"1", "x", "2"}}, false},
		{"hash", Record{ExpectedHash: &Hashed{Count: 4, MD5: HashValues(values)}}, true},
		{"hash with wrong count", Record{ExpectedHash: &Hashed{Count: 3, MD5: HashValues(values)}}, false},
		{"wrong hash", Record{ExpectedHash: &Hashed{Count: 4, MD5: strings.Repeat("0", 32)}}, false},
	}
	for _, tt := range tests {
		msg := Check(&tt.rec, res, values)
		if (msg == "") != tt.match {
			t.Errorf("%s: Check = %q, want match %v", tt.name, msg, tt.match)
		}
	}
}

func TestDescribe(t *testing.T) {
	if got := Describe([]string{"1", "2"}, 8); got != "1\n2" {
		t.Errorf("below threshold: %q", got)
	}
	nine := strings.Split(strings.Repeat("81,", 9), ",")[:9]
	if got := Describe(nine, 8); got != "9 values hashing to 7a8ea30c6803aeddc5fca5b5821d8267" {
		t.Errorf("above threshold: %q", got)
	}
}

func TestCheckMatches(t *testing.T) {
	res := Result{Columns: 2, Rows: [][]string{
		{"logical_plan", "Project: a"},
		{"logical_plan", "  Filter: a > 1"},
		{"logical_plan", "    Scan: t"},
		{"physical_plan", "ProjectExec"},
	}}
	tests := []struct {
		name     string
		patterns []string
		match    bool
	}{
		{"in order with gaps", []string{"^logical_plan Project", "Scan: t$", "^physical_plan"}, true},
		{"out of order", []string{"Scan: t", "Filter"}, false},
		{"absent", []string{"Sort"}, false},
		{"same row twice", []string{"Project: a", "Project: a"}, false},
		{"nothing required", nil, true},
	}
	for _, tt := range tests {
		rec := Record{Sort: Matches, Expected: tt.patterns}
		msg := Check(&rec, res, res.Values(Matches))
		if (msg == "") != tt.match {
			t.Errorf("%s: Check = %q, want match %v", tt.name, msg, tt.match)
		}
	}
}
