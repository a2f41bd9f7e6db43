package flightsql

import (
	"database/sql"
	"testing"

	_ "github.com/apache/arrow-adbc/go/adbc/sqldriver/flightsql"

	"github.com/cachedb/cachedb/engine"
)

// database/sql through ADBC: db.QueryContext(q, args...) is bulk ingest in that adapter, so
// parameterized statements go through PrepareContext.
func TestDatabaseSQLAdapter(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	ctx := testContext(t)
	db, err := sql.Open("flightsql", "uri=grpc://"+ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	if _, err := db.ExecContext(ctx, "CREATE TABLE pets (id BIGINT, name VARCHAR(20))"); err != nil {
		t.Fatal(err)
	}
	ins, err := db.PrepareContext(ctx, "INSERT INTO pets VALUES (?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"rex", "tom"} {
		res, err := ins.ExecContext(ctx, int64(i+1), name)
		if err != nil {
			t.Fatalf("insert %s: %v", name, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			t.Errorf("RowsAffected = %d, %v", n, err)
		}
	}
	ins.Close()

	sel, err := db.PrepareContext(ctx, "SELECT name FROM pets WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer sel.Close()
	rows, err := sel.QueryContext(ctx, int64(2))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != "tom" {
		t.Errorf("names = %v, want [tom]", names)
	}
}
