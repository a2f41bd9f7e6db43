package flightsql

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
)

// fuzzKey signs every ticket of the fuzz servers.
var fuzzKey = []byte("fuzz cluster secret")

// fuzzTables are the tables of the fuzz servers: edge values of each type, NULLs, duplicates.
var fuzzTables = []string{
	"CREATE TABLE r (id BIGINT, n BIGINT, d DOUBLE, s VARCHAR(16), m DECIMAL(10,2), dt DATE)",
	`INSERT INTO r VALUES (1, -9223372036854775807, -0.0, '', -12345678.12, '1970-01-01'),
		(2, 9223372036854775807, 1e308, 'x', 0.01, '9999-12-31'), (4, -1, -1.5, 'a b', 99999999.99, '2000-02-29'),
		(4, -1, -1.5, 'a b', 99999999.99, '2000-02-29'), (5, 42, 3.25, 'Ünïcödé', -0.5, '1000-01-01')`,
	"INSERT INTO r (id, n, d, s, m) VALUES (NULL, NULL, NULL, NULL, NULL)",
}

// fuzzDataset is the dataset the fuzz server holds (one partition of generation 1), so that
// partition and epoch tickets reach real data.
const fuzzDataset = "ds"

// newFuzzServer is a server (not listening: its handlers are called in-process) over an engine
// holding fuzzTables and fuzzDataset, with the data-node actions and tickets mounted as on a
// data node. Its limits are out of the way: fuzzing must not be refused by them.
func newFuzzServer(tb testing.TB) *Server {
	tb.Helper()
	ctx := context.Background()
	eng, err := engine.New(engine.Config{NoDemo: true, BatchSize: 2})
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range fuzzTables {
		if _, err := eng.Execute(ctx, s, nil); err != nil {
			tb.Fatalf("%s: %v", s, err)
		}
	}
	if _, err := eng.Materialize(ctx, cluster.MaterializeRequest{
		Dataset: fuzzDataset, Generation: 1, Partitions: 1, Partition: 0, Whole: true, SQL: "SELECT id, s, m FROM r",
	}); err != nil {
		tb.Fatal(err)
	}
	eng.UseShuffles(cluster.NewShuffles(fuzzKey))
	node := cluster.NodeConfig{ID: "fuzz", Version: "test", Key: fuzzKey, Store: eng, Shuffles: eng}
	return NewServer(eng, Options{
		TicketKey: fuzzKey, Extend: cluster.NodeActions(node),
		MaxConcurrentPerClient: 1 << 20, MaxPreparedPerClient: 1 << 20, Logger: quietLogger,
	})
}

// fuzzContext bounds one fuzz iteration.
func fuzzContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

// fakeStream is the server side of a streaming call made in-process. Send accepts at most
// limit messages (then fails, as a client that went away would make it), Recv hands out in.
type fakeStream struct {
	ctx   context.Context
	limit int
	sent  int
	in    []*flight.FlightData
}

var errEnough = errors.New("fuzz: enough messages")

func (f *fakeStream) count() error {
	if f.sent++; f.sent > f.limit {
		return errEnough
	}
	return nil
}

func (f *fakeStream) Context() context.Context     { return f.ctx }
func (f *fakeStream) SetHeader(metadata.MD) error  { return nil }
func (f *fakeStream) SendHeader(metadata.MD) error { return nil }
func (f *fakeStream) SetTrailer(metadata.MD)       {}
func (f *fakeStream) SendMsg(any) error            { return f.count() }
func (f *fakeStream) RecvMsg(any) error            { return io.EOF }

func (f *fakeStream) Recv() (*flight.FlightData, error) {
	if len(f.in) == 0 {
		return nil, io.EOF
	}
	m := f.in[0]
	f.in = f.in[1:]
	return m, nil
}

type fakeDoGet struct{ *fakeStream }

func (f fakeDoGet) Send(*flight.FlightData) error { return f.count() }

type fakeDoAction struct{ *fakeStream }

func (f fakeDoAction) Send(*flight.Result) error { return f.count() }

type fakeDoPut struct{ *fakeStream }

func (f fakeDoPut) Send(*flight.PutResult) error { return f.count() }

// doGet redeems ticket on svc and takes at most 64 messages of the stream.
func doGet(ctx context.Context, svc flight.FlightServer, ticket []byte) error {
	return svc.DoGet(&flight.Ticket{Ticket: ticket}, fakeDoGet{&fakeStream{ctx: ctx, limit: 64}})
}

// TestFuzzHarnessReachesExecution checks that what the fuzz targets send gets past decoding:
// a signed statement ticket and a partition ticket stream rows through the in-process calls.
func TestFuzzHarnessReachesExecution(t *testing.T) {
	s := newFuzzServer(t)
	ctx, cancel := fuzzContext()
	defer cancel()
	ticket, err := fsql.CreateStatementQueryTicket(s.tickets.encode(statementTicket{kind: ticketQuery, expires: time.Now().Add(time.Hour), sql: "SELECT * FROM r"}))
	if err != nil {
		t.Fatal(err)
	}
	part, err := cluster.EncodePartitionTicket(fuzzKey, cluster.PartitionTicket{Dataset: fuzzDataset, Generation: 1, Columns: []int{0, 1}, Expires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string][]byte{"statement": ticket, "partition": part} {
		stream := &fakeStream{ctx: ctx, limit: 64}
		if err := s.service.DoGet(&flight.Ticket{Ticket: raw}, fakeDoGet{stream}); err != nil {
			t.Errorf("%s ticket: %v", name, err)
		}
		// The schema, then the rows of r (6, in batches of 2).
		if stream.sent < 2 {
			t.Errorf("%s ticket: %d messages sent, want the schema and batches", name, stream.sent)
		}
	}
}
