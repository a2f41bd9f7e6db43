package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	memcat "github.com/cachedb/cachedb/catalog/memory"
)

// planBuilder builds logical plans by hand for rule tests, allocating column IDs as the binder
// would.
type planBuilder struct {
	t    *testing.T
	cat  *memcat.Catalog
	next ColumnID
}

func newPlanBuilder(t *testing.T) *planBuilder {
	t.Helper()
	cat := memcat.NewCatalog("test")
	for _, name := range []string{"t1", "t2"} {
		schema := arrow.NewSchema([]arrow.Field{
			{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "c", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		}, nil)
		if _, err := cat.CreateTable(context.Background(), name, schema, false); err != nil {
			t.Fatal(err)
		}
	}
	return &planBuilder{t: t, cat: cat, next: 1}
}

func (b *planBuilder) scan(table string) *Scan {
	tbl, err := b.cat.Table(context.Background(), table)
	if err != nil {
		b.t.Fatal(err)
	}
	s := &Scan{Table: tbl, Name: table, Alias: table}
	for i, f := range tbl.Schema().Fields() {
		s.Columns = append(s.Columns, Column{ID: b.next, Name: f.Name, Table: table, Type: f.Type, Nullable: true})
		s.Indices = append(s.Indices, i)
		b.next++
	}
	return s
}

func col(c Column) *ColumnRef { return &ColumnRef{ID: c.ID, Name: c.Name, T: c.Type} }

func lit(v int64) *Literal { return &Literal{Value: scalar.NewInt64Scalar(v)} }

func cmp(op string, l, r Expr) *Call {
	return &Call{Func: op, Args: []Expr{l, r}, T: arrow.FixedWidthTypes.Boolean}
}

func (b *planBuilder) project(in Plan, exprs ...Expr) *Project {
	p := &Project{Input: in, Exprs: exprs}
	for _, e := range exprs {
		name := e.String()
		if c, ok := e.(*ColumnRef); ok {
			name = c.Name
		}
		p.Columns = append(p.Columns, Column{ID: b.next, Name: name, Type: e.Type(), Nullable: true})
		b.next++
	}
	return p
}

func crossJoin(l, r Plan) *Join {
	return &Join{Left: l, Right: r, Kind: CrossJoin, Columns: append(append(Schema{}, l.Schema()...), r.Schema()...)}
}

// assertPlan compares Format(p) with want, ignoring leading and trailing blank lines.
func assertPlan(t *testing.T, p Plan, want string) {
	t.Helper()
	got := strings.TrimSpace(Format(p))
	want = strings.TrimSpace(want)
	if got != want {
		t.Errorf("plan mismatch\ngot:\n%s\nwant:\n%s", got, want)
	}
}
