package flightsql

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
)

// The fuzz targets here feed arbitrary bytes to the server's request decoding — tickets,
// command descriptors, action bodies, prepared statement handles and parameter batches — and
// run whatever decodes. Errors are fine; panics and hangs are not.

// fuzzSQL are statements the targets wrap into commands and tickets, huge counts among them.
var fuzzSQL = []string{
	"SELECT * FROM r ORDER BY id",
	"SELECT s, count(*), sum(m) FROM r GROUP BY s",
	"SELECT REPEAT('x', 2305843009213693952)",
	"SELECT LPAD(s, 4611686018427387904, 'y') FROM r",
	"SELECT SPACE(9223372036854775807)",
	"SELECT * FROM r LIMIT 18446744073709551615",
	"SELECT CAST(m AS DECIMAL(65,30)) FROM r",
	"SELECT ROUND(n, -9223372036854775808) FROM r",
	"SELECT id FROM r WHERE id IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10) AND ((((((((n > 0))))))))",
	"CREATE TABLE z (a INT)",
	"INSERT INTO r (id) VALUES (?)",
	"SELECT ? + 1, CONCAT(?, s) FROM r",
	"SELECT * FROM ds /* cachedb: epoch=1, seed=9223372036854775807, world_size=4, rank=3 */",
}

// anyCmd wraps a Flight SQL command as its descriptor bytes.
func anyCmd(m proto.Message) []byte {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	b, err := proto.Marshal(a)
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzStatementTicket redeems arbitrary statement tickets: as sent (almost all fail the
// signature), and as the payload of a ticket of any kind signed with the server's key, which
// lets the bytes through to the payload's decoding and then to execution (a query, a training
// segment, a stage).
func FuzzStatementTicket(f *testing.F) {
	s := newFuzzServer(f)
	add := func(p ticket.Payload) {
		b, err := json.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(byte(p.TicketKind()), b)
	}
	for _, q := range fuzzSQL {
		add(statementTicket{Stage: cluster.Stage{SQL: q}})
	}
	add(emptyTicket{})
	add(statementTicket{Stage: cluster.Stage{SQL: "SELECT 1", Catalog: "cachedb", Schema: "public", Pins: map[string]string{"r": "1"},
		Query: "q", Nodes: []string{"127.0.0.1:1", "127.0.0.1:2"}, Owners: [][]int{{0, 1, 1}}}, Self: 1})
	epoch := func(e engine.EpochSlice) { add(newTrainingTicket(e)) }
	good := engine.EpochSlice{Dataset: fuzzDataset, Generation: 1, Columns: []int{0, 1}, Names: []string{"id", "s"}, PartRows: []int64{6},
		Request: engine.DefaultEpochRequest(), From: 0, To: 6}
	epoch(good)
	huge := good
	huge.PartRows = []int64{math.MaxInt64}
	huge.To = math.MaxInt64
	huge.Request.ChunkRows, huge.Request.WindowRows = math.MaxInt, math.MaxInt
	huge.Request.Reader.BatchSize, huge.Request.Reader.WorldSize, huge.Request.Reader.NumWorkers = math.MaxInt, math.MaxInt, math.MaxInt
	epoch(huge)
	bounds := good // the largest numbers a training ticket lets through
	bounds.PartRows = []int64{maxTrainingRows}
	bounds.To = math.MaxInt64
	bounds.Request.ChunkRows, bounds.Request.WindowRows = maxTrainingCount, maxTrainingCount
	bounds.Request.Reader.BatchSize, bounds.Request.Reader.WorldSize, bounds.Request.Reader.NumWorkers = maxTrainingCount, maxTrainingCount, maxTrainingCount
	epoch(bounds)
	tiny := good
	tiny.PartRows = []int64{1 << 62}
	tiny.Request.ChunkRows, tiny.Request.WindowRows = 1, 1
	epoch(tiny)
	neg := good
	neg.From, neg.To, neg.Columns = -1, math.MinInt64, []int{-1, 1 << 40}
	epoch(neg)
	f.Add(byte(ticket.Statement), []byte{})
	f.Add(byte(ticket.Partition), []byte(`{"dataset":"r"}`))
	f.Add(byte(0xff), []byte(`{}`))

	f.Fuzz(func(t *testing.T, kind byte, raw []byte) {
		ctx, cancel := fuzzContext()
		defer cancel()
		_, _ = s.tickets.Open(raw, time.Now())
		noPanic(t, "unsigned ticket", doGet(ctx, s.service, raw))
		k := ticket.Kind(kind)
		signed, err := fsql.CreateStatementQueryTicket(s.tickets.SealRaw(k, k.Version(), time.Now().Add(time.Hour), raw))
		if err != nil {
			t.Fatal(err)
		}
		noPanic(t, "signed ticket", doGet(ctx, s.service, signed))
	})
}

// FuzzNodeTicket redeems partition and shuffle tickets signed with the cluster key whose
// fields are arbitrary: what a data node must survive from a head with a bug. Shuffle stages
// name only loopback addresses nothing listens on.
func FuzzNodeTicket(f *testing.F) {
	s := newFuzzServer(f)
	f.Add(false, fuzzDataset, uint64(1), 0, []byte{0, 1, 2}, "", 0, 0, 0, []byte{})
	f.Add(false, fuzzDataset, uint64(1), -1, []byte{255, 128}, "", 0, 0, 0, []byte{})
	f.Add(false, fuzzDataset, uint64(math.MaxUint64), math.MaxInt, []byte{}, "", 0, 0, 0, []byte{})
	for _, q := range fuzzSQL {
		f.Add(true, "", uint64(0), 0, []byte{}, q, 0, 0, 0, []byte{0, 1})
	}
	f.Add(true, "", uint64(0), 0, []byte{}, "SELECT s, count(*) FROM r GROUP BY s", math.MaxInt, math.MinInt, -1, []byte{9, 9})
	f.Add(true, "", uint64(0), 0, []byte{}, "SELECT a.id FROM r a JOIN r b ON a.s = b.s", 1, 3, 1, []byte{})

	f.Fuzz(func(t *testing.T, shuffle bool, dataset string, gen uint64, part int, columns []byte, sql string, shuffleNo, bucket, node int, owners []byte) {
		ctx, cancel := fuzzContext()
		defer cancel()
		exp := time.Now().Add(time.Hour)
		var (
			raw []byte
			err error
		)
		if shuffle {
			st := cluster.Stage{Query: "fuzz", SQL: sql, Nodes: []string{"127.0.0.1:1", "127.0.0.1:2"}, Expires: exp}
			var scan []int
			for _, o := range owners {
				scan = append(scan, int(int8(o)))
			}
			st.Owners = [][]int{scan}
			raw, err = cluster.EncodeShuffleTicket(fuzzKey, cluster.ShuffleTicket{Stage: st, Shuffle: shuffleNo, Bucket: bucket, Node: node})
		} else {
			cols := make([]int, len(columns))
			for i, c := range columns {
				cols[i] = int(int8(c))
			}
			raw, err = cluster.EncodePartitionTicket(fuzzKey, cluster.PartitionTicket{Dataset: dataset, Generation: gen, Partition: part, Columns: cols, Expires: exp})
		}
		if err != nil {
			t.Fatal(err)
		}
		noPanic(t, "node ticket", doGet(ctx, s.service, raw))
	})
}

// FuzzFlightInfoCommand sends arbitrary command descriptors to GetFlightInfo and GetSchema and
// redeems the endpoints of what succeeds (a metadata command's ticket is the command itself).
func FuzzFlightInfoCommand(f *testing.F) {
	s := newFuzzServer(f)
	str := func(v string) *string { return &v }
	for _, q := range fuzzSQL {
		f.Add(anyCmd(&pb.CommandStatementQuery{Query: q}))
		f.Add(anyCmd(&pb.CommandStatementUpdate{Query: q}))
	}
	f.Add(anyCmd(&pb.CommandStatementQuery{Query: "SELECT 1", TransactionId: []byte("tx")}))
	f.Add(anyCmd(&pb.CommandGetCatalogs{}))
	f.Add(anyCmd(&pb.CommandGetDbSchemas{Catalog: str("cachedb"), DbSchemaFilterPattern: str("%_\\")}))
	f.Add(anyCmd(&pb.CommandGetTables{TableNameFilterPattern: str("%%%%_%"), IncludeSchema: true, TableTypes: []string{"TABLE", ""}}))
	f.Add(anyCmd(&pb.CommandGetTableTypes{}))
	f.Add(anyCmd(&pb.CommandGetSqlInfo{Info: []uint32{0, 1, 500, math.MaxUint32}}))
	f.Add(anyCmd(&pb.CommandGetXdbcTypeInfo{DataType: proto.Int32(math.MinInt32)}))
	f.Add(anyCmd(&pb.CommandGetPrimaryKeys{Table: "r"}))
	f.Add(anyCmd(&pb.CommandGetExportedKeys{Table: ""}))
	f.Add(anyCmd(&pb.CommandGetImportedKeys{Table: "r", Catalog: str("")}))
	f.Add(anyCmd(&pb.CommandGetCrossReference{PkTable: "r", FkTable: "r"}))
	f.Add(anyCmd(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: []byte("0123456789abcdef0123456789abcdef")}))
	f.Add(anyCmd(&pb.CommandPreparedStatementUpdate{PreparedStatementHandle: []byte{0xff}}))
	f.Add(anyCmd(&pb.CommandStatementSubstraitPlan{Plan: &pb.SubstraitPlan{Plan: []byte{1, 2, 3}}}))
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})

	f.Fuzz(func(t *testing.T, cmd []byte) {
		ctx, cancel := fuzzContext()
		defer cancel()
		desc := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd}
		_, err := s.service.GetSchema(ctx, desc)
		noPanic(t, "GetSchema", err)
		info, err := s.service.GetFlightInfo(ctx, desc)
		if noPanic(t, "GetFlightInfo", err); err != nil {
			return
		}
		for _, ep := range info.Endpoint {
			noPanic(t, "DoGet", doGet(ctx, s.service, ep.GetTicket().GetTicket()))
		}
	})
}

// FuzzDoAction sends arbitrary actions: the Flight SQL ones (prepared statements, sessions,
// transactions), cachedb's load and the data-node actions.
func FuzzDoAction(f *testing.F) {
	s := newFuzzServer(f)
	body := func(m proto.Message) []byte { return anyCmd(m) }
	for _, q := range fuzzSQL {
		f.Add(fsql.CreatePreparedStatementActionType, body(&pb.ActionCreatePreparedStatementRequest{Query: q}))
	}
	f.Add(fsql.ClosePreparedStatementActionType, body(&pb.ActionClosePreparedStatementRequest{PreparedStatementHandle: []byte("nope")}))
	f.Add(fsql.BeginTransactionActionType, body(&pb.ActionBeginTransactionRequest{}))
	f.Add(fsql.CancelQueryActionType, []byte{})
	f.Add("SetSessionOptions", []byte{})
	f.Add("GetSessionOptions", []byte{})
	f.Add("CloseSession", []byte{})
	f.Add("CancelFlightInfo", []byte{0x0a, 0x00})
	f.Add("RenewFlightEndpoint", []byte{0x0a, 0x02, 0x0a, 0x00})
	spec, _ := json.Marshal(engine.DatasetSpec{Name: "x", SQL: "SELECT * FROM r"})
	f.Add(ActionLoad, spec)
	f.Add(ActionLoad, []byte(`{"name":"","partitions":-9223372036854775808,"columns":["`+string(make([]byte, 10))+`"]}`))
	f.Add(cluster.ActionNodeInfo, []byte{})
	f.Add(cluster.ActionMaterialize, []byte(`{"dataset":"m","generation":1,"partitions":1,"sql":"SELECT 1"}`))
	f.Add(cluster.ActionDropPartitions, []byte(`{"dataset":"ds","generation":1}`))
	f.Add("", []byte{})

	f.Fuzz(func(t *testing.T, typ string, raw []byte) {
		ctx, cancel := fuzzContext()
		defer cancel()
		noPanic(t, "DoAction", s.service.DoAction(&flight.Action{Type: typ, Body: raw}, fakeDoAction{&fakeStream{ctx: ctx, limit: 64}}))
		if s.prepared.len() > 1000 {
			s.prepared.closeAll()
		}
	})
}

// FuzzPreparedStatement prepares a statement, binds a parameter batch built from the input
// (any column types, huge and negative values; optionally with its IPC message header or body
// replaced by raw bytes, or the handle replaced), then runs it as a query or an update.
func FuzzPreparedStatement(f *testing.F) {
	s := newFuzzServer(f)
	for _, q := range fuzzSQL {
		f.Add(q, []byte{0, 2}, []byte("0123456789abcdef\xff\xff\xff\xff\xff\xff\xff\x7f"), uint8(0), []byte{})
	}
	f.Add("SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?", []byte{0, 1, 2, 3, 4, 5, 6, 7, 8}, []byte("\x00\x00\x00\x00\x00\x00\x00\x80hello"), uint8(3), []byte{})
	f.Add("SELECT REPEAT(s, ?), LPAD(s, ?, 'y') FROM r LIMIT ?", []byte{0, 0, 8}, []byte("\x00\x00\x00\x00\x00\x00\x00\x20\xff\xff\xff\xff\xff\xff\xff\x7f"), uint8(0), []byte{})
	f.Add("INSERT INTO r (id, s) VALUES (?, ?)", []byte{0, 2}, []byte("\x01\x00\x00\x00\x00\x00\x00\x00abc"), uint8(1), []byte{0xff, 0xff, 0xff, 0xff})
	f.Add("SELECT ?", []byte{2}, []byte("x"), uint8(2), []byte{0x10, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Add("SELECT ?", []byte{1}, []byte{}, uint8(4), []byte("not a handle"))

	f.Fuzz(func(t *testing.T, query string, kinds, values []byte, mode uint8, raw []byte) {
		ctx, cancel := fuzzContext()
		defer cancel()
		res, err := s.CreatePreparedStatement(ctx, &pb.ActionCreatePreparedStatementRequest{Query: query})
		if err != nil {
			return
		}
		defer func() {
			_ = s.ClosePreparedStatement(ctx, &pb.ActionClosePreparedStatementRequest{PreparedStatementHandle: res.Handle})
		}()
		handle := res.Handle
		if mode&4 != 0 {
			handle = raw
		}
		msgs := parameterMessages(t, kinds, values, int(mode>>3)%4+1)
		if len(msgs) > 1 && mode&1 != 0 {
			msgs[1].DataHeader = raw
		}
		if len(msgs) > 1 && mode&2 != 0 {
			msgs[1].DataBody = raw
		}
		put := func(cmd proto.Message) {
			in := make([]*flight.FlightData, len(msgs))
			for i, m := range msgs {
				in[i] = proto.Clone(m).(*flight.FlightData)
			}
			in[0].FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: anyCmd(cmd)}
			noPanic(t, "DoPut", s.service.DoPut(fakeDoPut{&fakeStream{ctx: ctx, limit: 64, in: in}}))
		}
		if res.IsUpdate != nil && *res.IsUpdate {
			put(&pb.CommandPreparedStatementUpdate{PreparedStatementHandle: handle})
			return
		}
		put(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: handle})
		desc := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: anyCmd(&pb.CommandPreparedStatementQuery{PreparedStatementHandle: handle})}
		info, err := s.service.GetFlightInfo(ctx, desc)
		if noPanic(t, "GetFlightInfo", err); err != nil {
			return
		}
		for _, ep := range info.Endpoint {
			noPanic(t, "DoGet", doGet(ctx, s.service, ep.GetTicket().GetTicket()))
		}
	})
}
