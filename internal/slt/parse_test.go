package slt

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/internal/errs"
)

func TestParse(t *testing.T) {
	const file = `hash-threshold 8

# a comment
statement ok
CREATE TABLE t1(a INTEGER,
  b INTEGER)

skipif mysql # not compatible
statement error
SELECT 1 / 0x

onlyif mysql
query IT rowsort label-7
SELECT a, b
  FROM t1
----
1
x

query R
SELECT 1.5
----
9 values hashing to 7A8EA30C6803AEDDC5FCA5B5821D8267

query I valuesort
SELECT a FROM t1
----

halt
`
	got, err := Parse(strings.NewReader(file), "f.test")
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{File: "f.test", Line: 1, Kind: KindHashThreshold, Threshold: 8},
		{File: "f.test", Line: 4, Kind: KindStatement, SQL: "CREATE TABLE t1(a INTEGER,\n  b INTEGER)"},
		{File: "f.test", Line: 9, Kind: KindStatement, ExpectError: true, SQL: "SELECT 1 / 0x",
			Conditions: []Condition{{Only: false, Engine: "mysql"}}},
		{File: "f.test", Line: 13, Kind: KindQuery, Types: "IT", Sort: RowSort, Label: "label-7",
			SQL: "SELECT a, b\n  FROM t1", Expected: []string{"1", "x"},
			Conditions: []Condition{{Only: true, Engine: "mysql"}}},
		{File: "f.test", Line: 20, Kind: KindQuery, Types: "R", Sort: NoSort, SQL: "SELECT 1.5",
			ExpectedHash: &Hashed{Count: 9, MD5: "7a8ea30c6803aeddc5fca5b5821d8267"}},
		{File: "f.test", Line: 25, Kind: KindQuery, Types: "I", Sort: ValueSort, SQL: "SELECT a FROM t1", Expected: []string{}},
		{File: "f.test", Line: 29, Kind: KindHalt},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("record %d:\n got  %+v\n want %+v", i, got[i], want[i])
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, file, wantInMessage string
	}{
		{"unknown command", "frobnicate\n", `f.test:1: unknown command "frobnicate"`},
		{"statement without ok or error", "statement maybe\nSELECT 1\n", "ok or error"},
		{"bad column type", "query X\nSELECT 1\n----\n1\n", "not I, R or T"},
		{"no sql", "statement ok\n\n", "no SQL"},
		{"bad threshold", "hash-threshold many\n", "not a non-negative number"},
		{"dangling condition", "skipif mysql\n", "no record"},
		{"condition before blank line", "onlyif mysql\n\nhalt\n", "blank line"},
		{"junk after label", "query I rowsort label-1 extra\nSELECT 1\n", `unexpected "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.file), "f.test")
			if err == nil {
				t.Fatal("parse succeeded, want an error")
			}
			if errs.CategoryOf(err) != errs.InvalidInput {
				t.Errorf("category %v, want invalid input", errs.CategoryOf(err))
			}
			if !strings.Contains(err.Error(), tt.wantInMessage) {
				t.Errorf("error %q does not mention %q", err, tt.wantInMessage)
			}
		})
	}
}

func TestAppliesTo(t *testing.T) {
	tests := []struct {
		conds []Condition
		want  bool
	}{
		{nil, true},
		{[]Condition{{Only: false, Engine: "mysql"}}, false},
		{[]Condition{{Only: false, Engine: "postgresql"}}, true},
		{[]Condition{{Only: true, Engine: "mysql"}}, true},
		{[]Condition{{Only: true, Engine: "sqlite"}}, false},
		{[]Condition{{Only: false, Engine: "mssql"}, {Only: true, Engine: "mysql"}}, true},
	}
	for _, tt := range tests {
		r := Record{Conditions: tt.conds}
		if got := r.AppliesTo("mysql"); got != tt.want {
			t.Errorf("AppliesTo(mysql) with %+v = %v, want %v", tt.conds, got, tt.want)
		}
	}
}

// TestParseCorpus parses every file of the shared conformance corpus, when it is present, so a
// construct the parser does not know is caught here rather than as a wall of failures.
func TestParseCorpus(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "slt")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("corpus not present at %s", root)
	}
	files, err := FindFiles(root, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no test files under %s", root)
	}
	for _, f := range files {
		if _, err := ParseFile(f.Path); err != nil {
			t.Errorf("%s: %v", f.Name, err)
		}
	}
}
