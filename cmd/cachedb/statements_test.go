package main

import (
	"reflect"
	"testing"
)

func TestSplitStatements(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"one per line", "SELECT 1\n\nSELECT 2\n", []string{"SELECT 1", "SELECT 2"}},
		{"terminated", "SELECT 1; SELECT 2;", []string{"SELECT 1", "SELECT 2"}},
		{"spanning lines", "SELECT\n  1;\nSELECT 2", []string{"SELECT\n  1", "SELECT 2"}},
		{"semicolon in string", "SELECT 'a;b'; SELECT \"c;\"", []string{"SELECT 'a;b'", `SELECT "c;"`}},
		{"escaped quote", `SELECT 'it''s;' ; SELECT 'x\';'`, []string{`SELECT 'it''s;'`, `SELECT 'x\';'`}},
		{"comments", "SELECT 1 -- no; split\n; /* ; */ SELECT 2 # ;\n;", []string{"SELECT 1 -- no; split", "/* ; */ SELECT 2 # ;"}},
		{"empty", "  \n ; ;", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := splitStatements(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("splitStatements(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestFlagsFromEnv(t *testing.T) {
	cmd := newServeCommand()
	if err := cmd.Flags().Parse([]string{"--catalog", "fromflag"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CACHEDB_LISTEN": "0.0.0.0:1", "CACHEDB_CATALOG": "fromenv", "CACHEDB_NO_DEMO": "true"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := flagsFromEnv(cmd.Flags(), lookup); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"listen": "0.0.0.0:1", "catalog": "fromflag", "no-demo": "true"} {
		if got := cmd.Flags().Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", flag, got, want)
		}
	}
	env["CACHEDB_NO_DEMO"] = "maybe"
	cmd = newServeCommand()
	if err := flagsFromEnv(cmd.Flags(), lookup); err == nil {
		t.Error("a malformed CACHEDB_NO_DEMO was accepted")
	}
}
