package sql

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/planner"
)

// formatKeys renders keys as "NAME(col[len] …)", primary keys marked with *.
func formatKeys(ct *planner.CreateTable) string {
	var out []string
	for _, k := range ct.Keys {
		var cols []string
		for i, c := range k.Columns {
			col := ct.Schema.Field(c).Name
			if k.PrefixLengths[i] > 0 {
				col += fmt.Sprintf("[%d]", k.PrefixLengths[i])
			}
			cols = append(cols, col)
		}
		mark := ""
		if k.Primary {
			mark = "*"
		}
		out = append(out, mark+k.Name+"("+strings.Join(cols, " ")+")")
	}
	return strings.Join(out, " ")
}

func TestCreateTableKeys(t *testing.T) {
	tests := []struct {
		sql, want string
	}{
		{"create table t (x integer primary key, y varchar(16))", "*PRIMARY(x)"},
		{"create table t (a int, b text, primary key (a, b))", "*PRIMARY(a b)"},
		{"create table t (a int unique, b int unique key)", "a(a) b(b)"},
		{"create table t (a text, unique (a(1)))", "a(a[1])"},
		{"create table t (a int, b int, unique key ab (a, b), constraint c1 unique (b), key plain (a))", "ab(a b) c1(b)"},
		{"create table t (a int unique, b int, unique (a, b), unique (a))", "a(a) a_2(a b) a_3(a)"},
		{"create table t (a int, b int)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			ct := bindStatement(t, tt.sql, nil).(*planner.CreateTable)
			if got := formatKeys(ct); got != tt.want {
				t.Errorf("keys %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCreateTableKeyErrors(t *testing.T) {
	tests := []struct {
		sql, category, msg string
	}{
		{"create table t (a int primary key, b int, primary key (b))", "invalid input", "Multiple primary key defined"},
		{"create table t (a int, primary key (z))", "not found", "Key column 'z' doesn't exist in table"},
		{"create table t (a int, b int, unique k (a), unique k (b))", "invalid input", "Duplicate key name 'k'"},
		{"create table t (a int, unique (a, a))", "invalid input", "Duplicate column name 'a'"},
		{"create table t (a int, unique (a(2)))", "invalid input", "Incorrect prefix key"},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			_, err := Bind(context.Background(), tt.sql, testCatalog(t), nil)
			if err == nil {
				t.Fatalf("Bind succeeded, want a %s error", tt.category)
			}
			if got := categoryName(err); got != tt.category || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %v (%s), want %s containing %q", err, got, tt.category, tt.msg)
			}
		})
	}
}

func TestInsertConflictModes(t *testing.T) {
	tests := []struct {
		sql  string
		want planner.OnDuplicate
	}{
		{"insert into t1 values (1, 2, 'x')", planner.DuplicateFails},
		{"insert ignore into t1 values (1, 2, 'x')", planner.DuplicateSkipped},
		{"replace into t1 values (1, 2, 'x')", planner.DuplicateReplaces},
		{"replace t1 (a) select a from t2", planner.DuplicateReplaces},
	}
	for _, tt := range tests {
		ins, ok := bindStatement(t, tt.sql, nil).(*planner.Insert)
		if !ok {
			t.Fatalf("%s: not an Insert", tt.sql)
		}
		if ins.OnDuplicate != tt.want {
			t.Errorf("%s: OnDuplicate %d, want %d", tt.sql, ins.OnDuplicate, tt.want)
		}
	}
}
