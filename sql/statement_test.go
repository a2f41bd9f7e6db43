package sql

import (
	"strings"
	"testing"

	"github.com/cachedb/cachedb/planner"
)

func TestCreateTable(t *testing.T) {
	tests := []struct {
		sql, schema string
		ifNotExists bool
	}{
		{"create table t (a integer, b bigint not null, c smallint, d tinyint)",
			"a: type=int64, nullable; b: type=int64; c: type=int64, nullable; d: type=int64, nullable", false},
		{"create table if not exists t (x double, y float, z real, w decimal(10,2), v decimal)",
			"x: type=float64, nullable; y: type=float64, nullable; z: type=float64, nullable; w: type=decimal(10, 2), nullable; v: type=decimal(10, 0), nullable", true},
		{"create table t (s varchar(40) default 'x', u char(2) null, v text, b boolean)",
			"s: type=utf8, nullable; u: type=utf8, nullable; v: type=utf8, nullable; b: type=bool, nullable", false},
		{"create table t (d date, ts timestamp, dt datetime)",
			"d: type=date32, nullable; ts: type=timestamp[us], nullable; dt: type=timestamp[us], nullable", false},
		{"create table t (a int primary key, b int)", "a: type=int64; b: type=int64, nullable", false},
		{"create table t (a int, b int, primary key (b))", "a: type=int64, nullable; b: type=int64", false},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			ct, ok := bindStatement(t, tt.sql, nil).(*planner.CreateTable)
			if !ok {
				t.Fatalf("not a CreateTable")
			}
			if ct.Name != "t" || ct.IfNotExists != tt.ifNotExists || ct.AsSelect != nil {
				t.Errorf("got name %q ifNotExists %v asSelect %v", ct.Name, ct.IfNotExists, ct.AsSelect)
			}
			if got := schemaText(ct); got != tt.schema {
				t.Errorf("schema:\n got %s\nwant %s", got, tt.schema)
			}
		})
	}
}

// schemaText renders a CreateTable's schema compactly.
func schemaText(ct *planner.CreateTable) string {
	var parts []string
	for _, f := range ct.Schema.Fields() {
		s := f.Name + ": type=" + f.Type.String()
		if f.Nullable {
			s += ", nullable"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func TestCreateTableAsSelect(t *testing.T) {
	ct := bindStatement(t, "create table s as select a, c as name from t1 where b > 0", nil).(*planner.CreateTable)
	if ct.AsSelect == nil {
		t.Fatal("AsSelect is nil")
	}
	if got, want := schemaText(ct), "a: type=int64, nullable; name: type=utf8, nullable"; got != want {
		t.Errorf("schema = %s, want %s", got, want)
	}
}

func TestInsert(t *testing.T) {
	tests := []struct {
		sql     string
		columns []int
		plan    string
	}{
		{"insert into t1 values (1, 2, 'x'), (3, null, 4)", []int{0, 1, 2}, `
Values: rows=2 columns=[a#1, b#2, c#3]`},
		{"insert into t1 (c, a) values ('x', 1.5)", []int{2, 0}, `
Values: rows=1 columns=[c#1, a#2]`},
		{"insert into t2 select b, a from t1", []int{0, 1}, `
Project: b#4 AS a#6, a#5 AS d#7
  Project: b#2 AS b#4, a#1 AS a#5
    Scan: t1 columns=[a#1, b#2, c#3]`},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			ins, ok := bindStatement(t, tt.sql, nil).(*planner.Insert)
			if !ok {
				t.Fatal("not an Insert")
			}
			if len(ins.Columns) != len(tt.columns) {
				t.Fatalf("columns = %v, want %v", ins.Columns, tt.columns)
			}
			for i := range tt.columns {
				if ins.Columns[i] != tt.columns[i] {
					t.Fatalf("columns = %v, want %v", ins.Columns, tt.columns)
				}
			}
			if got, want := strings.TrimSpace(planner.Format(ins.Source.Plan)), strings.TrimSpace(tt.plan); got != want {
				t.Errorf("source:\n%s\nwant:\n%s", got, want)
			}
		})
	}
	// Values keep their common type per column (the engine converts them as it stores them,
	// strictly); untyped NULLs alone take the column's type.
	ins := bindStatement(t, "insert into t1 (c, a, b) values (1, 'x', null), (2, 1.5, null)", nil).(*planner.Insert)
	v := ins.Source.Plan.(*planner.Values)
	var types []string
	for _, c := range v.Columns {
		types = append(types, c.Type.String())
	}
	if got, want := strings.Join(types, " "), "int64 utf8 int64"; got != want {
		t.Errorf("VALUES column types = %s, want %s", got, want)
	}
	if got, want := v.Rows[1][1].String(), "CAST(1.5 AS utf8)"; got != want {
		t.Errorf("row 2 value = %s, want %s", got, want)
	}
}

func TestOtherStatements(t *testing.T) {
	drop := bindStatement(t, "drop table if exists a, b", nil).(*planner.DropTable)
	if !drop.IfExists || strings.Join(drop.Names, ",") != "a,b" {
		t.Errorf("drop = %+v", drop)
	}
	if set, ok := bindStatement(t, "SET sql_mode = ''", nil).(*planner.Set); !ok || set.Text != "SET sql_mode = ''" {
		t.Errorf("set = %#v", set)
	}
	ex := bindStatement(t, "explain select a from t1", nil).(*planner.Explain)
	if ex.Analyze || ex.Query == nil {
		t.Errorf("explain = %+v", ex)
	}
	ex = bindStatement(t, "explain analyze select a from t1", nil).(*planner.Explain)
	if !ex.Analyze {
		t.Errorf("explain analyze = %+v", ex)
	}
}
