package sql

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// testCatalog holds:
//
//	t1(a BIGINT, b BIGINT, c VARCHAR)
//	t2(a BIGINT, d DOUBLE)
//	t3(x DECIMAL(10,2), y VARCHAR NOT NULL)
func testCatalog(t testing.TB) *memcat.Catalog {
	t.Helper()
	cat := memcat.NewCatalog("test")
	ctx := context.Background()
	i64, f64, str := arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, arrow.BinaryTypes.String
	tables := map[string][]arrow.Field{
		"t1": {{Name: "a", Type: i64, Nullable: true}, {Name: "b", Type: i64, Nullable: true}, {Name: "c", Type: str, Nullable: true}},
		"t2": {{Name: "a", Type: i64, Nullable: true}, {Name: "d", Type: f64, Nullable: true}},
		"t3": {{Name: "x", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true}, {Name: "y", Type: str}},
	}
	for name, fields := range tables {
		if _, err := cat.CreateTable(ctx, name, arrow.NewSchema(fields, nil), false); err != nil {
			t.Fatal(err)
		}
	}
	return cat
}

// bindQuery binds text and returns the formatted plan of the query.
func bindQuery(t *testing.T, text string) string {
	t.Helper()
	stmt, err := Bind(context.Background(), text, testCatalog(t), nil)
	if err != nil {
		t.Fatalf("Bind(%q): %v", text, err)
	}
	q, ok := stmt.(*planner.Query)
	if !ok {
		t.Fatalf("Bind(%q) = %T, want *planner.Query", text, stmt)
	}
	return planner.Format(q.Plan)
}

// categoryName names an error's category for test tables.
func categoryName(err error) string { return errs.CategoryOf(err).String() }

type scalarValue = scalar.Scalar

func int64Scalar(v int64) scalar.Scalar { return scalar.NewInt64Scalar(v) }

// bindStatement binds text against the test catalog with params.
func bindStatement(t *testing.T, text string, params []scalar.Scalar) planner.Statement {
	t.Helper()
	stmt, err := Bind(context.Background(), text, testCatalog(t), params)
	if err != nil {
		t.Fatalf("Bind(%q): %v", text, err)
	}
	return stmt
}

// selectExpr binds a one-item SELECT and returns the item's expression.
func selectExpr(t *testing.T, text string) planner.Expr {
	t.Helper()
	q, ok := bindStatement(t, text, nil).(*planner.Query)
	if !ok {
		t.Fatalf("%q is not a query", text)
	}
	p, ok := q.Plan.(*planner.Project)
	if !ok || len(p.Exprs) != 1 {
		t.Fatalf("%q: plan is not a one-column projection:\n%s", text, planner.Format(q.Plan))
	}
	return p.Exprs[0]
}

// bindErr binds text against a fresh test catalog.
func bindErr(t *testing.T, text string) (planner.Statement, error) {
	return Bind(context.Background(), text, testCatalog(t), nil)
}
