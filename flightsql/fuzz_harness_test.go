package flightsql

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
)

// fuzzKey signs every ticket of the fuzz servers.
var fuzzKey = ticket.NewKeyring([]byte("fuzz cluster secret"), nil)

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
	rt := newRuntime(tb, eng, fuzzKey)
	if _, err := rt.Materialize(ctx, cluster.MaterializeRequest{
		Dataset: fuzzDataset, Generation: 1, Partitions: 1, Partition: 0, Whole: true, SQL: "SELECT id, s, m FROM r",
	}); err != nil {
		tb.Fatal(err)
	}
	actions := cluster.NodeConfig{ID: "fuzz", Version: "test", Key: fuzzKey, Store: rt, Shuffles: rt}
	return NewServer(eng, Options{
		TicketKey: fuzzKey, Node: rt, Extend: cluster.NodeActions(actions),
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

// noPanic fails the fuzz iteration when err is a panic the server recovered from (the
// handlers turn those into Internal errors and keep serving): the fuzzer must see them.
func noPanic(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	if strings.Contains(msg, "arrow/ipc: unknown error while reading") {
		return // arrow-go's IPC reader recovers its own panics on malformed messages into errors
	}
	if strings.Contains(msg, "internal error in") || strings.Contains(msg, "runtime error") || strings.Contains(msg, "panic") {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestFuzzHarnessReachesExecution checks that what the fuzz targets send gets past decoding:
// a signed statement ticket and a partition ticket stream rows through the in-process calls.
func TestFuzzHarnessReachesExecution(t *testing.T) {
	s := newFuzzServer(t)
	ctx, cancel := fuzzContext()
	defer cancel()
	stmt, err := s.sealTicket(time.Now().Add(time.Hour), statementTicket{Stage: cluster.Stage{SQL: "SELECT * FROM r"}})
	if err != nil {
		t.Fatal(err)
	}
	part, err := cluster.EncodePartitionTicket(fuzzKey, cluster.PartitionTicket{Dataset: fuzzDataset, Generation: 1, Columns: []int{0, 1}, Expires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string][]byte{"statement": stmt, "partition": part} {
		stream := &fakeStream{ctx: ctx, limit: 64}
		if err := s.service.DoGet(&flight.Ticket{Ticket: raw}, fakeDoGet{stream}); err != nil {
			t.Errorf("%s ticket: %v", name, err)
		}
		// The schema, then the rows of r (6, in batches of 2).
		if stream.sent < 2 {
			t.Errorf("%s ticket: %d messages sent, want the schema and batches", name, stream.sent)
		}
	}

	res, err := s.CreatePreparedStatement(ctx, &pb.ActionCreatePreparedStatementRequest{Query: "SELECT ? + 1"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := parameterMessages(t, []byte{0}, []byte{41}, 1)
	cmd := anyCmd(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: res.Handle})
	msgs[0].FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd}
	if err := s.service.DoPut(fakeDoPut{&fakeStream{ctx: ctx, limit: 64, in: msgs}}); err != nil {
		t.Fatalf("binding parameters: %v", err)
	}
	info, err := s.service.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd})
	if err != nil {
		t.Fatalf("GetFlightInfo of the bound statement: %v", err)
	}
	stream := &fakeStream{ctx: ctx, limit: 64}
	if err := s.service.DoGet(info.Endpoint[0].Ticket, fakeDoGet{stream}); err != nil || stream.sent < 2 {
		t.Errorf("running the bound statement: %v, %d messages", err, stream.sent)
	}
}

// parameterMessages builds a parameter batch of rows rows, one column per kind (the kind
// picks the type), its values read from values (zero once they run out), and returns it as
// the Flight messages a client sends: the schema, then the batch.
func parameterMessages(t *testing.T, kinds, values []byte, rows int) []*flight.FlightData {
	t.Helper()
	if len(kinds) > 16 {
		kinds = kinds[:16]
	}
	next := func(n int) []byte {
		out := make([]byte, n)
		copy(out, values)
		values = values[min(n, len(values)):]
		return out
	}
	u64 := func() uint64 { return binary.LittleEndian.Uint64(next(8)) }
	alloc := memory.DefaultAllocator
	var (
		fields []arrow.Field
		cols   []arrow.Array
	)
	for i, k := range kinds {
		var b array.Builder
		switch k % 10 {
		case 0:
			ib := array.NewInt64Builder(alloc)
			for range rows {
				ib.Append(int64(u64()))
			}
			b = ib
		case 1:
			fb := array.NewFloat64Builder(alloc)
			for range rows {
				fb.Append(math.Float64frombits(u64()))
			}
			b = fb
		case 2:
			sb := array.NewStringBuilder(alloc)
			for range rows {
				sb.Append(string(next(int(next(1)[0]) % 32)))
			}
			b = sb
		case 3:
			bb := array.NewBooleanBuilder(alloc)
			for range rows {
				bb.Append(next(1)[0]&1 == 1)
			}
			b = bb
		case 4:
			nb := array.NewNullBuilder(alloc)
			nb.AppendNulls(rows)
			b = nb
		case 5:
			db := array.NewDecimal128Builder(alloc, &arrow.Decimal128Type{Precision: 38, Scale: int32(k / 10 % 39)})
			for range rows {
				db.Append(decimal128.New(int64(u64()), u64()))
			}
			b = db
		case 6:
			db := array.NewDate32Builder(alloc)
			for range rows {
				db.Append(arrow.Date32(int32(u64())))
			}
			b = db
		case 7:
			bb := array.NewBinaryBuilder(alloc, arrow.BinaryTypes.Binary)
			for range rows {
				bb.Append(next(int(next(1)[0]) % 32))
			}
			b = bb
		case 8:
			ub := array.NewUint64Builder(alloc)
			for range rows {
				ub.Append(u64())
			}
			b = ub
		default:
			tb := array.NewTimestampBuilder(alloc, &arrow.TimestampType{Unit: arrow.Microsecond})
			for range rows {
				if next(1)[0]&1 == 1 {
					tb.AppendNull()
					continue
				}
				tb.Append(arrow.Timestamp(int64(u64())))
			}
			b = tb
		}
		col := b.NewArray()
		b.Release()
		defer col.Release()
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("p%d", i), Type: col.DataType(), Nullable: true})
		cols = append(cols, col)
	}
	schema := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(schema, cols, int64(rows))
	defer rec.Release()
	var out collectedMessages
	w := flight.NewRecordWriter(&out, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// collectedMessages keeps copies of what a flight.RecordWriter sends (it reuses its message).
type collectedMessages []*flight.FlightData

func (c *collectedMessages) Send(m *flight.FlightData) error {
	*c = append(*c, proto.Clone(m).(*flight.FlightData))
	return nil
}
