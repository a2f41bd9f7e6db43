package flightsql

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/catalog"
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/engine"
)

// sessionConn opens an ADBC connection with cookies on, as session options need.
func (ts *testServer) sessionConn(t *testing.T) adbc.Connection {
	t.Helper()
	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{
		adbc.OptionKeyURI:                 "grpc://" + ts.addr,
		adbcflight.OptionCookieMiddleware: adbc.OptionValueEnabled,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cnxn, err := db.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cnxn.Close() })
	return cnxn
}

// firstValue runs a query and returns its first column of its first row as text.
func firstValue(t *testing.T, cnxn adbc.Connection, query string) (string, error) {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(query); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		return "", err
	}
	defer rdr.Release()
	// Read to the end: a reader let go early cancels the stream, and the server counts the
	// query as canceled rather than finished.
	first, found := "", false
	for rdr.Next() {
		if rec := rdr.RecordBatch(); rec.NumRows() > 0 && !found {
			first, found = rec.Column(0).ValueStr(0), true
		}
	}
	if err := rdr.Err(); err != nil {
		return "", err
	}
	return first, nil
}

func TestSessionOptionsChooseCatalogForUnqualifiedNames(t *testing.T) {
	ctx := context.Background()
	lake := memcat.NewCatalog("lake")
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	tbl, err := lake.CreateTable(ctx, "t", schema, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.StringBuilder).Append("from lake")
	rec := b.NewRecordBatch()
	b.Release()
	if err := tbl.(catalog.InsertableTable).Append(ctx, rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()

	ts := startServer(t, engine.Config{NoDemo: true, Sources: []catalog.Catalog{lake}}, Options{})
	if _, err := ts.eng.Execute(ctx, "CREATE TABLE t (v VARCHAR(20))", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.eng.Execute(ctx, "INSERT INTO t VALUES ('from memory')", nil); err != nil {
		t.Fatal(err)
	}
	cnxn := ts.sessionConn(t)
	got, err := firstValue(t, cnxn, "SELECT v FROM t")
	if err != nil || got != "from memory" {
		t.Fatalf("before choosing a catalog: %q %v", got, err)
	}
	ns := cnxn.(adbc.GetSetOptions)
	if err := ns.SetOption(adbc.OptionKeyCurrentCatalog, "lake"); err != nil {
		t.Fatal(err)
	}
	if cur, err := ns.GetOption(adbc.OptionKeyCurrentCatalog); err != nil || cur != "lake" {
		t.Errorf("current catalog = %q, %v", cur, err)
	}
	got, err = firstValue(t, cnxn, "SELECT v FROM t")
	if err != nil || got != "from lake" {
		t.Fatalf("after choosing lake: %q %v", got, err)
	}
	// Another connection keeps its own (default) choice.
	other := ts.sessionConn(t)
	if got, err := firstValue(t, other, "SELECT v FROM t"); err != nil || got != "from memory" {
		t.Errorf("second connection: %q %v", got, err)
	}
	err = ns.SetOption(adbc.OptionKeyCurrentCatalog, "nope")
	if err == nil || !strings.Contains(err.Error(), "catalog") {
		t.Errorf("unknown catalog accepted: %v", err)
	}
	if got, err := firstValue(t, cnxn, "SELECT v FROM t"); err != nil || got != "from lake" {
		t.Errorf("a refused option changed the session: %q %v", got, err)
	}
}
