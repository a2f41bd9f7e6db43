package flightsql

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/engine"
)

// A prepared statement declares the type of each ? from where it stands, and a bare ? in the
// select list is declared and streamed with that same type, whatever type the client binds:
// ADBC compares each endpoint's schema with the declared one.
func TestADBCPreparedParameterTypes(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	cnxn := ts.adbcConn(t)
	ctx := testContext(t)
	adbcUpdate(t, cnxn, "CREATE TABLE kv (k BIGINT, v VARCHAR(10))")
	adbcUpdate(t, cnxn, "INSERT INTO kv VALUES (1, 'one'), (2, 'two')")

	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery("SELECT ? AS p, v FROM kv WHERE k = ? AND v LIKE ?"); err != nil {
		t.Fatal(err)
	}
	if err := stmt.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	ps, err := stmt.GetParameterSchema()
	if err != nil {
		t.Fatal(err)
	}
	want := []arrow.DataType{arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String}
	for i, f := range ps.Fields() {
		if !arrow.TypeEqual(f.Type, want[i]) {
			t.Errorf("parameter %d declared %s, want %s", i+1, f.Type, want[i])
		}
	}
	// The client binds int64 for the bare ? and the key, and a string pattern.
	three := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.PrimitiveTypes.Int64}, {Name: "c", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, three)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(7)
	b.Field(1).(*array.Int64Builder).Append(2)
	b.Field(2).(*array.StringBuilder).Append("t%")
	rec := b.NewRecordBatch()
	defer rec.Release()
	if err := stmt.Bind(ctx, rec); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		t.Fatalf("prepared SELECT with a bare ?: %v", err)
	}
	defer rdr.Release()
	if got := rdr.Schema().Field(0).Type; !arrow.TypeEqual(got, arrow.BinaryTypes.String) {
		t.Errorf("bare ? column is %s, want utf8 (its declared parameter type)", got)
	}
	if rows := renderRows(t, rdr); len(rows) != 1 || rows[0] != "7,two" {
		t.Errorf("rows %v, want [7,two]", rows)
	}
}
