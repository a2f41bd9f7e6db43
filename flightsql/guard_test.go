package flightsql

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
)

// TestHostileStatementsLeaveServerServing sends statements whose size computations used to
// overflow and panic in operator goroutines (killing the server, and with data nodes every data
// node), then a statement that would grow the process without bound, then a normal query: the
// first come back as MySQL's NULLs, the next as ResourceExhausted, and the server still answers.
func TestHostileStatementsLeaveServerServing(t *testing.T) {
	wh := demoWarehouse(t)
	newEngineConfig := func() engine.Config {
		return engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake"}
	}
	for _, nodes := range []int{0, 2} {
		t.Run(map[int]string{0: "alone", 2: "with two data nodes"}[nodes], func(t *testing.T) {
			key := ticket.NewKeyring([]byte("guard test secret"), nil)
			var addrs []string
			for range nodes {
				addrs = append(addrs, startDataNode(t, newEngineConfig(), key).addr)
			}
			opts, headCfg := Options{}, newEngineConfig()
			if nodes > 0 {
				opts = Options{TicketKey: key, DataNodes: func() []string { return addrs }}
				headCfg.DataNodes = func() int { return len(addrs) }
			}
			head := startServer(t, headCfg, opts)
			cl := head.arrowClient(t)
			ctx := testContext(t)
			if info, err := cl.Execute(ctx, "SELECT city FROM demo.rides"); err != nil || (nodes > 0 && len(info.Endpoint) != nodes) {
				t.Fatalf("plain scan: %v; want one endpoint per data node", err)
			}
			for _, q := range []string{
				"SELECT REPEAT(city, 2305843009213693952) FROM demo.rides",
				"SELECT LPAD(city, 4611686018427387904, 'y') FROM demo.rides",
				"SELECT REPEAT('x', 2305843009213693952) FROM demo.rides",
			} {
				rows, err := queryFirstColumn(ctx, cl, q)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				if len(rows) != 200000 || rows[0] != "(null)" || rows[len(rows)-1] != "(null)" {
					t.Errorf("%s: %d rows, first %.20q; want 200000 NULLs", q, len(rows), rows)
				}
			}
			for _, q := range []string{
				"SELECT REPEAT(city, 1000000) FROM demo.rides",
				"SELECT REPEAT('x', 1000000) FROM demo.rides",
			} {
				_, err := queryFirstColumn(ctx, cl, q)
				if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "limit of one expression per batch") {
					t.Errorf("%s: %v, want ResourceExhausted naming the per-batch limit", q, err)
				}
			}
			rows, err := queryFirstColumn(ctx, cl, "SELECT count(*) FROM demo.rides")
			if err != nil || strings.Join(rows, ",") != "200000" {
				t.Errorf("count after the hostile statements: %v, %v; want 200000", rows, err)
			}
		})
	}
}

// TestInvalidUTF8ParameterIsRefused: a string parameter that is not UTF-8 would be stored and
// fail every client's validation when read back, so it is refused when bound.
func TestInvalidUTF8ParameterIsRefused(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	cl := ts.arrowClient(t)
	ctx := testContext(t)
	if _, err := cl.ExecuteUpdate(ctx, "CREATE TABLE words (w VARCHAR(10))"); err != nil {
		t.Fatal(err)
	}
	prep, err := cl.Prepare(ctx, "INSERT INTO words VALUES (?)")
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{{Name: "1", Type: arrow.BinaryTypes.String}}, nil))
	b.Field(0).(*array.StringBuilder).Append("ok\xff")
	params := b.NewRecordBatch()
	b.Release()
	prep.SetParameters(params)
	params.Release()
	_, err = prep.ExecuteUpdate(ctx)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "Invalid utf8mb4 character string: 'FF'") {
		t.Errorf("INSERT of a non-UTF-8 parameter: %v, want InvalidArgument", err)
	}
	rows, err := queryFirstColumn(ctx, cl, "SELECT count(*) FROM words")
	if err != nil || strings.Join(rows, ",") != "0" {
		t.Errorf("rows stored: %v, %v; want none", rows, err)
	}
}

// queryFirstColumn runs q and reads every endpoint where its location says (a data node, or
// the server asked), returning the first column's values as text or the first error, from
// Execute or from reading.
func queryFirstColumn(ctx context.Context, cl *flightsql.Client, q string) ([]string, error) {
	info, err := cl.Execute(ctx, q)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ep := range info.Endpoint {
		from := cl
		if len(ep.Location) > 0 {
			node, err := flightsql.NewClient(strings.TrimPrefix(ep.Location[0].Uri, "grpc://"), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				return nil, err
			}
			defer node.Close()
			from = node
		}
		rdr, err := from.DoGet(ctx, ep.Ticket)
		if err != nil {
			return nil, err
		}
		for rdr.Next() {
			col := rdr.RecordBatch().Column(0)
			for i := range col.Len() {
				out = append(out, col.ValueStr(i))
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
