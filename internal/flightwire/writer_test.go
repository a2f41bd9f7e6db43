package flightwire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// testSchema has a column of every layout the writer sends: fixed-width values, validity
// bitmaps, offsets, booleans, dictionaries and fixed-size lists.
var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "d", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	{Name: "v", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32), Nullable: true},
}, nil)

// testBatch returns a batch of rows rows starting at id from (some values null).
func testBatch(mem memory.Allocator, from, rows int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	for i := from; i < from+rows; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		null := i%7 == 3
		if null {
			b.Field(1).AppendNull()
			b.Field(2).AppendNull()
			b.Field(3).AppendNull()
			b.Field(4).AppendNull()
			b.Field(5).AppendNull()
			continue
		}
		b.Field(1).(*array.Float32Builder).Append(float32(i) / 2)
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("row %d", i))
		b.Field(3).(*array.BooleanBuilder).Append(i%3 == 0)
		if err := b.Field(4).(*array.BinaryDictionaryBuilder).AppendString(fmt.Sprintf("k%d", i%5)); err != nil {
			panic(err)
		}
		lb := b.Field(5).(*array.FixedSizeListBuilder)
		lb.Append(true)
		for k := range 4 {
			lb.ValueBuilder().(*array.Float32Builder).Append(float32(i + k))
		}
	}
	return b.NewRecordBatch()
}

// sendService answers every DoGet by sending its batches with a Writer, each with its
// metadata; sent receives the handler's result.
type sendService struct {
	flight.BaseFlightServer
	batches  []arrow.RecordBatch
	metadata [][]byte
	sent     chan error
}

func (s *sendService) DoGet(_ *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	err := func() error {
		w := NewWriter(stream, testSchema)
		for i, b := range s.batches {
			if err := w.Write(b, s.metadata[i]); err != nil {
				return err
			}
		}
		return w.Close()
	}()
	s.sent <- err
	return err
}

// serve starts a server encoding with Codec over svc on loopback and returns a connection to
// it; both end with the test.
func serve(tb testing.TB, svc flight.FlightServer) *grpc.ClientConn {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ForceServerCodecV2(Codec()))
	flight.RegisterFlightServiceServer(srv, svc)
	go func() { _ = srv.Serve(lis) }()
	tb.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	return conn
}

// readStream starts a DoGet on conn and returns its reader, having checked the schema.
func readStream(t *testing.T, conn *grpc.ClientConn) *flight.Reader {
	t.Helper()
	stream, err := flight.NewFlightServiceClient(conn).DoGet(context.Background(), &flight.Ticket{Ticket: []byte("all")})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Schema().Equal(testSchema) {
		t.Fatalf("schema %s, want %s", rdr.Schema(), testSchema)
	}
	return rdr
}

// readSent reads svc's stream from a server over it and checks that it carries svc's batches,
// each with its metadata, and that the server's sends succeeded.
func readSent(t *testing.T, svc *sendService) {
	t.Helper()
	rdr := readStream(t, serve(t, svc))
	defer rdr.Release()
	got := 0
	for rdr.Next() {
		if got >= len(svc.batches) {
			t.Fatalf("more than the %d batches sent", len(svc.batches))
		}
		if want := svc.batches[got]; !array.RecordEqual(rdr.RecordBatch(), want) {
			t.Fatalf("batch %d differs from the one sent:\n%v\nwant\n%v", got, rdr.RecordBatch(), want)
		}
		if md := rdr.LatestAppMetadata(); !bytes.Equal(md, svc.metadata[got]) {
			t.Fatalf("batch %d's app metadata is %q, want %q", got, md, svc.metadata[got])
		}
		got++
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	if got != len(svc.batches) {
		t.Fatalf("read %d batches, want %d", got, len(svc.batches))
	}
	if err := <-svc.sent; err != nil {
		t.Fatal(err)
	}
}

// waitReleased polls, with a deadline and collections in between, until mem holds nothing.
func waitReleased(t *testing.T, mem *memory.CheckedAllocator) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for mem.CurrentAlloc() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes of the sent batches were never released", mem.CurrentAlloc())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWriterSendsBatchesAsTheyAre(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	// Whole batches, slices at odd offsets (bitmaps and offsets the IPC writer realigns), a
	// batch of no rows, one of a row, and a large one whose buffers are sent as they are.
	whole := testBatch(mem, 0, 1000)
	large := testBatch(mem, 1000, 50_000)
	svc := &sendService{sent: make(chan error, 1)}
	svc.batches = []arrow.RecordBatch{whole, whole.NewSlice(3, 700), large.NewSlice(1, 49_999), testBatch(mem, 0, 0), large.NewSlice(17, 18), large}
	for i := range svc.batches {
		var md []byte
		if i%2 == 0 {
			md = []byte(fmt.Sprintf("batch %d", i))
		}
		svc.metadata = append(svc.metadata, md)
	}
	readSent(t, svc)
	for _, b := range svc.batches {
		b.Release()
	}
	whole.Release()
	large.Release()
	waitReleased(t, mem)
}

func TestWriterSendsTheSchemaOfAnEmptyStream(t *testing.T) {
	rdr := readStream(t, serve(t, &sendService{sent: make(chan error, 1)}))
	defer rdr.Release()
	if rdr.Next() {
		t.Fatal("a batch from an empty stream")
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
}

// endlessService sends one batch over and over until the send fails.
type endlessService struct {
	flight.BaseFlightServer
	batch arrow.RecordBatch
	ended chan error
}

func (s *endlessService) DoGet(_ *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	w := NewWriter(stream, testSchema)
	defer w.Close()
	for {
		if err := w.Write(s.batch, nil); err != nil {
			s.ended <- err
			return err
		}
	}
}

// A client that goes away mid-stream (its call canceled, or its connection closed) ends the
// server's sends with an error, and no batch is held for what the transport had not sent.
func TestWriterEndsWhenTheClientVanishes(t *testing.T) {
	for _, how := range []string{"cancel", "close"} {
		t.Run(how, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			batch := testBatch(mem, 0, 20_000)
			vanishMidStream(t, batch, how)
			batch.Release()
			waitReleased(t, mem)
		})
	}
}

// vanishMidStream serves batch over and over to a client that reads three messages and then
// goes away (how: "cancel" its call or "close" its connection), and returns once the server's
// send has failed.
func vanishMidStream(t *testing.T, batch arrow.RecordBatch, how string) {
	t.Helper()
	svc := &endlessService{batch: batch, ended: make(chan error, 1)}
	conn := serve(t, svc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := flight.NewFlightServiceClient(conn).DoGet(ctx, &flight.Ticket{Ticket: []byte("endless")})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := stream.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	if how == "cancel" {
		cancel()
	} else {
		_ = conn.Close()
	}
	select {
	case err := <-svc.ended:
		if err == nil {
			t.Fatal("the send to a client that went away succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server kept sending to a client that went away")
	}
}

// A message is encoded as gRPC's proto codec encodes the same FlightData.
func TestMessageEncodingIsFlightData(t *testing.T) {
	mem := memory.NewGoAllocator()
	batch := testBatch(mem, 0, 3000)
	defer batch.Release()
	for _, tc := range []struct {
		name string
		rec  arrow.RecordBatch
		md   []byte
	}{
		{"batch", batch, []byte("runs")},
		{"slice", batch.NewSlice(5, 2001), nil},
		{"small", batch.NewSlice(1, 3), []byte{0}},
		{"empty", batch.NewSlice(0, 0), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent []encodedMessage
			s := &sender{stream: captureStream{sent: &sent}, appMetadata: tc.md}
			w := ipc.NewWriterWithPayloadWriter(s, ipc.WithSchema(testSchema))
			if err := w.Write(tc.rec); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			// The schema, the dictionary, the batch.
			if len(sent) != 3 {
				t.Fatalf("%d messages, want 3", len(sent))
			}
			for i, m := range sent {
				want, err := proto.Marshal(m.fields)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(m.encoded, want) {
					t.Fatalf("message %d: encoded as %d bytes that differ from FlightData's %d", i, len(m.encoded), len(want))
				}
			}
			if i := len(sent) - 1; !bytes.Equal(sent[i].fields.AppMetadata, tc.md) {
				t.Fatalf("the batch's app metadata is %q, want %q", sent[i].fields.AppMetadata, tc.md)
			}
			if tc.rec != batch {
				tc.rec.Release()
			}
		})
	}
}

// encodedMessage is a message as encoded, and the FlightData of its fields.
type encodedMessage struct {
	encoded []byte
	buffers int // the buffers it was encoded in
	fields  *flight.FlightData
}

// captureStream encodes the messages sent on it, as gRPC does within SendMsg.
type captureStream struct {
	grpc.ServerStream
	sent *[]encodedMessage
}

func (c captureStream) SendMsg(m any) error {
	msg, ok := m.(*message)
	if !ok {
		return errors.New("not a message")
	}
	encoded := msg.encode()
	defer encoded.Free()
	var body []byte
	for _, p := range msg.body {
		body = append(body, p...)
	}
	fields := &flight.FlightData{DataHeader: bytes.Clone(msg.header), AppMetadata: bytes.Clone(msg.appMetadata), DataBody: body}
	*c.sent = append(*c.sent, encodedMessage{encoded: encoded.Materialize(), buffers: len(encoded), fields: fields})
	return nil
}

var _ io.Writer = (*bodyPieces)(nil)

func TestBufferPoolHandsOutPowersOfTwo(t *testing.T) {
	var p bufferPool
	for _, size := range []int{0, 1, 1025, 4096, 4097, 3 << 20} {
		b := p.Get(size)
		if len(*b) != size || cap(*b) < size || cap(*b)&(cap(*b)-1) != 0 {
			t.Fatalf("Get(%d): len %d cap %d, want len %d and a power of two cap", size, len(*b), cap(*b), size)
		}
		p.Put(b)
	}
	// A buffer of another capacity (not one of the pool's) is dropped, never handed out.
	odd := make([]byte, 3000)
	p.Put(&odd)
	for range 100 {
		if b := p.Get(2500); cap(*b) != 4096 {
			t.Fatalf("Get(2500) has cap %d, want 4096", cap(*b))
		}
	}
}
