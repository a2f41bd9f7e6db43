package flightsql

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/engine"
)

// adbcConn opens an ADBC Flight SQL connection to ts, closed when the test ends.
func (ts *testServer) adbcConn(t *testing.T) adbc.Connection {
	t.Helper()
	drv := adbcflight.NewDriver(memory.DefaultAllocator)
	db, err := drv.NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + ts.addr})
	if err != nil {
		t.Fatalf("NewDatabase: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	cnxn, err := db.Open(context.Background())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { cnxn.Close() })
	return cnxn
}

func adbcUpdate(t *testing.T, cnxn adbc.Connection, query string) int64 {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(query); err != nil {
		t.Fatal(err)
	}
	n, err := stmt.ExecuteUpdate(testContext(t))
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// adbcQuery runs a query and renders its rows as "v1,v2" strings (NULL for nulls).
func adbcQuery(t *testing.T, cnxn adbc.Connection, query string) (*arrow.Schema, []string) {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(query); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := stmt.ExecuteQuery(testContext(t))
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rdr.Release()
	return rdr.Schema(), renderRows(t, rdr)
}

func renderRows(t *testing.T, rdr array.RecordReader) []string {
	t.Helper()
	var rows []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			vals := make([]string, rec.NumCols())
			for c := range vals {
				col := rec.Column(c)
				if col.IsNull(r) {
					vals[c] = "NULL"
				} else {
					vals[c] = col.ValueStr(r)
				}
			}
			rows = append(rows, strings.Join(vals, ","))
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatalf("reading rows: %v", err)
	}
	return rows
}

func TestADBCRoundTrip(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	cnxn := ts.adbcConn(t)

	adbcUpdate(t, cnxn, "CREATE TABLE people (id BIGINT, name VARCHAR(20))")
	if n := adbcUpdate(t, cnxn, "INSERT INTO people VALUES (1, 'ada'), (2, 'bob'), (3, NULL)"); n != 3 {
		t.Errorf("INSERT reported %d rows, want 3", n)
	}
	schema, rows := adbcQuery(t, cnxn, "SELECT id, name FROM people ORDER BY id")
	if got := schema.Field(0).Name + "," + schema.Field(1).Name; got != "id,name" {
		t.Errorf("columns = %s", got)
	}
	want := []string{"1,ada", "2,bob", "3,NULL"}
	if strings.Join(rows, ";") != strings.Join(want, ";") {
		t.Errorf("rows = %v, want %v", rows, want)
	}

	// DDL sent as a query runs and yields an empty result.
	_, rows = adbcQuery(t, cnxn, "CREATE TABLE made_by_query (x BIGINT)")
	if len(rows) != 0 {
		t.Errorf("CREATE TABLE as a query returned rows %v", rows)
	}
	if _, err := ts.eng.Catalog().Table(context.Background(), "made_by_query"); err != nil {
		t.Errorf("CREATE TABLE sent as a query did not create the table: %v", err)
	}
}

func TestADBCMetadata(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true, CatalogName: "testcat"}, Options{Version: "1.2.3"})
	ctx := testContext(t)
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
	}
	if _, err := ts.eng.Catalog().CreateTable(ctx, "things", arrow.NewSchema(fields, nil), false); err != nil {
		t.Fatal(err)
	}
	cnxn := ts.adbcConn(t)

	t.Run("GetTableSchema", func(t *testing.T) {
		cat, sch := "testcat", PublicSchema
		got, err := cnxn.GetTableSchema(ctx, &cat, &sch, "things")
		if err != nil {
			t.Fatal(err)
		}
		if got.NumFields() != 2 || got.Field(0).Name != "id" || !arrow.TypeEqual(got.Field(1).Type, arrow.BinaryTypes.String) {
			t.Errorf("schema = %s", got)
		}
		if _, err := cnxn.GetTableSchema(ctx, &cat, &sch, "missing"); err == nil {
			t.Error("GetTableSchema of a missing table succeeded")
		}
	})

	t.Run("GetObjects", func(t *testing.T) {
		rdr, err := cnxn.GetObjects(ctx, adbc.ObjectDepthAll, nil, nil, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		var text strings.Builder
		for rdr.Next() {
			b, err := rdr.RecordBatch().MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			text.Write(b)
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"testcat"`, `"public"`, `"things"`, `"label"`} {
			if !strings.Contains(text.String(), want) {
				t.Errorf("GetObjects lacks %s: %s", want, text.String())
			}
		}
	})

	t.Run("GetTableTypes", func(t *testing.T) {
		rdr, err := cnxn.GetTableTypes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		if rows := renderRows(t, rdr); len(rows) != 1 || rows[0] != "TABLE" {
			t.Errorf("table types = %v", rows)
		}
	})

	t.Run("GetInfo", func(t *testing.T) {
		rdr, err := cnxn.GetInfo(ctx, []adbc.InfoCode{adbc.InfoVendorName, adbc.InfoVendorVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		rows := strings.Join(renderRows(t, rdr), ";")
		for _, want := range []string{"cachedb", "1.2.3"} {
			if !strings.Contains(rows, want) {
				t.Errorf("GetInfo lacks %q: %s", want, rows)
			}
		}
	})
}

func TestADBCPreparedStatement(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	cnxn := ts.adbcConn(t)
	ctx := testContext(t)
	adbcUpdate(t, cnxn, "CREATE TABLE kv (k BIGINT, v VARCHAR(10))")

	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery("INSERT INTO kv VALUES (?, ?)"); err != nil {
		t.Fatal(err)
	}
	if err := stmt.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	params := paramBatch(t, []int64{1, 2, 3}, []string{"one", "two", "three"})
	defer params.Release()
	if err := stmt.Bind(ctx, params); err != nil {
		t.Fatal(err)
	}
	n, err := stmt.ExecuteUpdate(ctx)
	if err != nil {
		t.Fatalf("prepared INSERT: %v", err)
	}
	if n != 3 {
		t.Errorf("prepared INSERT over 3 parameter rows reported %d rows", n)
	}

	q, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := q.SetSqlQuery("SELECT v FROM kv WHERE k = ?"); err != nil {
		t.Fatal(err)
	}
	if err := q.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	key := paramBatch(t, []int64{2}, nil)
	defer key.Release()
	if err := q.Bind(ctx, key); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := q.ExecuteQuery(ctx)
	if err != nil {
		t.Fatalf("prepared SELECT: %v", err)
	}
	defer rdr.Release()
	if rows := renderRows(t, rdr); len(rows) != 1 || rows[0] != "two" {
		t.Errorf("SELECT v WHERE k = 2 gave %v", rows)
	}
}

// paramBatch builds a parameter batch with an int64 column and, when strs is not nil, a utf8
// column.
func paramBatch(t *testing.T, ints []int64, strs []string) arrow.RecordBatch {
	t.Helper()
	fields := []arrow.Field{{Name: "1", Type: arrow.PrimitiveTypes.Int64}}
	if strs != nil {
		fields = append(fields, arrow.Field{Name: "2", Type: arrow.BinaryTypes.String})
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ints, nil)
	if strs != nil {
		b.Field(1).(*array.StringBuilder).AppendValues(strs, nil)
	}
	return b.NewRecordBatch()
}

func TestADBCErrorsCarryCodeAndMessage(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	cnxn := ts.adbcConn(t)
	adbcUpdate(t, cnxn, "CREATE TABLE present (x BIGINT)")

	tests := []struct {
		name  string
		query string
		code  adbc.Status
		words string
	}{
		{"missing table", "SELECT * FROM no_such_table", adbc.StatusNotFound, "no_such_table"},
		{"duplicate table", "CREATE TABLE present (x BIGINT)", adbc.StatusAlreadyExists, "present"},
		{"syntax", "SELEKT 1", adbc.StatusInvalidArgument, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stmt, err := cnxn.NewStatement()
			if err != nil {
				t.Fatal(err)
			}
			defer stmt.Close()
			if err := stmt.SetSqlQuery(tt.query); err != nil {
				t.Fatal(err)
			}
			rdr, _, err := stmt.ExecuteQuery(testContext(t))
			if err == nil {
				rdr.Release()
				t.Fatalf("%s succeeded", tt.query)
			}
			var ae adbc.Error
			if !errors.As(err, &ae) {
				t.Fatalf("error %v is not an adbc.Error", err)
			}
			if ae.Code != tt.code {
				t.Errorf("code = %v, want %v (%v)", ae.Code, tt.code, err)
			}
			if !strings.Contains(ae.Msg, tt.words) {
				t.Errorf("message %q does not name %q", ae.Msg, tt.words)
			}
		})
	}
	// The server keeps serving after the failures.
	if _, rows := adbcQuery(t, cnxn, "SELECT 1"); len(rows) != 1 || rows[0] != "1" {
		t.Errorf("SELECT 1 after errors gave %v", rows)
	}
}

func TestADBCClientCancelsMidStream(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{MaxBatchBytes: 256 << 10})
	makeBigTable(t, ts.eng, "big", 50_000, 200)
	cnxn := ts.adbcConn(t)

	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery("SELECT * FROM big"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatalf("no first batch: %v", rdr.Err())
	}
	cancel()
	rdr.Release()

	deadline := time.Now().Add(10 * time.Second)
	for ts.srv.streams.load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d result streams still running after the client canceled", ts.srv.streams.load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, rows := adbcQuery(t, cnxn, "SELECT 1"); len(rows) != 1 {
		t.Errorf("server does not serve after a canceled stream: %v", rows)
	}
}
