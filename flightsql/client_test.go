package flightsql

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
)

// makeBigTable creates a table (id BIGINT, text VARCHAR) of rows rows, each text width bytes,
// straight through the catalog, in batches larger than any Flight message may be.
func makeBigTable(t *testing.T, eng *engine.Engine, name string, rows, width int) {
	t.Helper()
	ctx := context.Background()
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "text", Type: arrow.BinaryTypes.String, Nullable: true},
	}
	tbl, err := eng.Catalog().CreateTable(ctx, name, arrow.NewSchema(fields, nil), false)
	if err != nil {
		t.Fatal(err)
	}
	ins, ok := tbl.(catalog.InsertableTable)
	if !ok {
		t.Fatalf("table %s does not accept rows", name)
	}
	const perBatch = 25_000
	for start := 0; start < rows; start += perBatch {
		end := min(start+perBatch, rows)
		rec := buildBatch(memory.DefaultAllocator, end-start, func(int) int { return width })
		ids := rec.Column(0).(*array.Int64)
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for i := 0; i < ids.Len(); i++ {
			b.Append(int64(start + i))
		}
		idArr := b.NewArray()
		b.Release()
		shifted := array.NewRecordBatch(ins.Schema(), []arrow.Array{idArr, rec.Column(1)}, rec.NumRows())
		idArr.Release()
		rec.Release()
		if err := ins.Append(ctx, shifted); err != nil {
			t.Fatal(err)
		}
		shifted.Release()
	}
}

// readInfo reads every endpoint of info with cl and returns the rows rendered as strings.
func readInfo(t *testing.T, cl *flightsql.Client, info *flight.FlightInfo) (*arrow.Schema, []string) {
	t.Helper()
	ctx := testContext(t)
	var schema *arrow.Schema
	var rows []string
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatalf("DoGet: %v", err)
		}
		schema = rdr.Schema()
		rows = append(rows, renderRows(t, rdr)...)
		rdr.Release()
	}
	return schema, rows
}

func TestArrowClientMetadataCommands(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	ctx := testContext(t)
	fields := []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}
	for _, name := range []string{"alpha", "beta"} {
		if _, err := ts.eng.Catalog().CreateTable(ctx, name, arrow.NewSchema(fields, nil), false); err != nil {
			t.Fatal(err)
		}
	}
	cl := ts.arrowClient(t)
	str := func(s string) *string { return &s }

	tests := []struct {
		name string
		info func() (*flight.FlightInfo, error)
		want []string
	}{
		{"catalogs", func() (*flight.FlightInfo, error) { return cl.GetCatalogs(ctx) }, []string{"cachedb"}},
		{"schemas", func() (*flight.FlightInfo, error) { return cl.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{}) }, []string{"cachedb,public"}},
		{"schemas of another catalog", func() (*flight.FlightInfo, error) {
			return cl.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{Catalog: str("other")})
		}, nil},
		{"tables", func() (*flight.FlightInfo, error) { return cl.GetTables(ctx, &flightsql.GetTablesOpts{}) },
			[]string{"cachedb,public,alpha,TABLE", "cachedb,public,beta,TABLE"}},
		{"tables by pattern", func() (*flight.FlightInfo, error) {
			return cl.GetTables(ctx, &flightsql.GetTablesOpts{TableNameFilterPattern: str("b%")})
		}, []string{"cachedb,public,beta,TABLE"}},
		{"tables of type VIEW", func() (*flight.FlightInfo, error) {
			return cl.GetTables(ctx, &flightsql.GetTablesOpts{TableTypes: []string{"VIEW"}})
		}, nil},
		{"table types", func() (*flight.FlightInfo, error) { return cl.GetTableTypes(ctx) }, []string{"TABLE"}},
		{"primary keys", func() (*flight.FlightInfo, error) {
			return cl.GetPrimaryKeys(ctx, flightsql.TableRef{Table: "alpha"})
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := tt.info()
			if err != nil {
				t.Fatal(err)
			}
			_, rows := readInfo(t, cl, info)
			if strings.Join(rows, ";") != strings.Join(tt.want, ";") {
				t.Errorf("rows = %v, want %v", rows, tt.want)
			}
		})
	}

	t.Run("tables with schema", func(t *testing.T) {
		info, err := cl.GetTables(ctx, &flightsql.GetTablesOpts{TableNameFilterPattern: str("alpha"), IncludeSchema: true})
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		if !rdr.Next() || rdr.RecordBatch().NumRows() != 1 {
			t.Fatalf("no row for alpha: %v", rdr.Err())
		}
		raw := rdr.RecordBatch().Column(4).(*array.Binary).Value(0)
		got, err := flight.DeserializeSchema(raw, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(arrow.NewSchema(fields, nil)) {
			t.Errorf("schema = %s", got)
		}
	})

	t.Run("xdbc type info", func(t *testing.T) {
		info, err := cl.GetXdbcTypeInfo(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, rows := readInfo(t, cl, info)
		if len(rows) != len(xdbcTypes) || !strings.HasPrefix(rows[0], "BIGINT,-5") {
			t.Errorf("type info = %v", rows)
		}
		varchar := int32(12)
		info, err = cl.GetXdbcTypeInfo(ctx, &varchar)
		if err != nil {
			t.Fatal(err)
		}
		if _, rows = readInfo(t, cl, info); len(rows) != 1 || !strings.HasPrefix(rows[0], "VARCHAR") {
			t.Errorf("VARCHAR type info = %v", rows)
		}
	})

	t.Run("sql info", func(t *testing.T) {
		info, err := cl.GetSqlInfo(ctx, []flightsql.SqlInfo{
			flightsql.SqlInfoFlightSqlServerName,
			flightsql.SqlInfoIdentifierQuoteChar,
			flightsql.SqlInfoFlightSqlServerSubstraitMinVersion, // not registered: left out
		})
		if err != nil {
			t.Fatal(err)
		}
		_, rows := readInfo(t, cl, info)
		joined := strings.Join(rows, ";")
		if len(rows) != 2 || !strings.Contains(joined, "cachedb") || !strings.Contains(joined, "`") {
			t.Errorf("sql info = %v", rows)
		}
	})
}

func TestArrowClientRefusesForgedTickets(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	cl := ts.arrowClient(t)
	ctx := testContext(t)

	forged, err := flightsql.CreateStatementQueryTicket([]byte("SELECT * FROM secrets"))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := ts.srv.tickets.Seal(ts.srv.now().Add(time.Minute), statementTicket{Stage: cluster.Stage{SQL: "SELECT 1"}})
	if err != nil {
		t.Fatal(err)
	}
	signed[len(signed)-1] ^= 0xff
	tampered, err := flightsql.CreateStatementQueryTicket(signed)
	if err != nil {
		t.Fatal(err)
	}
	for name, ticket := range map[string][]byte{
		"garbage":  []byte("\x00\xffgarbage"),
		"forged":   forged,
		"tampered": tampered,
	} {
		t.Run(name, func(t *testing.T) {
			rdr, err := cl.DoGet(ctx, &flight.Ticket{Ticket: ticket})
			if err == nil {
				rdr.Release()
				t.Fatal("DoGet accepted the ticket")
			}
			if code := status.Code(err); code != codes.InvalidArgument {
				t.Errorf("code = %v, want InvalidArgument (%v)", code, err)
			}
		})
	}
	// Still serving.
	if _, err := cl.GetCatalogs(ctx); err != nil {
		t.Errorf("GetCatalogs after forged tickets: %v", err)
	}
}

func TestArrowClientStatementsAndPrepared(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	cl := ts.arrowClient(t)
	ctx := testContext(t)

	if _, err := cl.ExecuteUpdate(ctx, "CREATE TABLE nums (n BIGINT)"); err != nil {
		t.Fatal(err)
	}
	n, err := cl.ExecuteUpdate(ctx, "INSERT INTO nums VALUES (1), (2)")
	if err != nil || n != 2 {
		t.Fatalf("INSERT = %d, %v; want 2 rows", n, err)
	}

	prep, err := cl.Prepare(ctx, "INSERT INTO nums VALUES (?)")
	if err != nil {
		t.Fatal(err)
	}
	if got := prep.ParameterSchema().NumFields(); got != 1 {
		t.Errorf("parameter schema has %d fields, want 1", got)
	}
	if isUpdate, ok := prep.IsUpdate(); !ok || !isUpdate {
		t.Errorf("IsUpdate = %v, %v; want true", isUpdate, ok)
	}
	params := paramBatch(t, []int64{10, 20, 30}, nil)
	prep.SetParameters(params)
	params.Release()
	if n, err := prep.ExecuteUpdate(ctx); err != nil || n != 3 {
		t.Errorf("prepared INSERT = %d, %v; want 3 rows", n, err)
	}
	if err := prep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ts.srv.prepared.len(); got != 0 {
		t.Errorf("%d prepared statements still open after Close", got)
	}

	info, err := cl.Execute(ctx, "SELECT n FROM nums ORDER BY n")
	if err != nil {
		t.Fatal(err)
	}
	if _, rows := readInfo(t, cl, info); strings.Join(rows, ",") != "1,2,10,20,30" {
		t.Errorf("rows = %v", rows)
	}

	// A query whose rows outgrow the client's 4 MiB receive limit arrives in capped batches.
	makeBigTable(t, ts.eng, "wide", 30_000, 1000)
	info, err = cl.Execute(ctx, "SELECT id, text FROM wide")
	if err != nil {
		t.Fatal(err)
	}
	if _, rows := readInfo(t, cl, info); len(rows) != 30_000 {
		t.Errorf("read %d rows of wide, want 30000", len(rows))
	}
}
