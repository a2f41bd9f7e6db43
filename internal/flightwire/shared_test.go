package flightwire

import (
	"bytes"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/protobuf/proto"
)

// counter is a Reservation that counts.
type counter struct{ n int64 }

func (c *counter) Grow(n int64)   { c.n += n }
func (c *counter) Shrink(n int64) { c.n -= n }

// waitShared polls, with a deadline, until the buffers of Allocators not yet back in the pool
// are as many as before the test (base): every buffer the test had is back, the batches having
// released them and gRPC having written out every message that referred to them. (Buffers of
// messages a vanished client never received are never back.)
func waitShared(t *testing.T, base int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for sharedLive.Load() != base {
		if time.Now().After(deadline) {
			t.Fatalf("%d shared buffers were never handed back", sharedLive.Load()-base)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Batches whose buffers an Allocator made are sent with their large buffers referred to, not
// copied, and arrive as they were; once the batches are released and the messages written,
// every buffer is back and nothing is counted as held.
func TestSharedBatchesArriveAsTheyAre(t *testing.T) {
	base := sharedLive.Load()
	held := &counter{}
	alloc := NewAllocator(held)
	big := testBatch(alloc, 0, 30_000)
	svc := &sendService{sent: make(chan error, 1)}
	svc.batches = []arrow.RecordBatch{big, testBatch(alloc, 5, 100), big.NewSlice(7, 20_000), big}
	svc.metadata = [][]byte{[]byte("first"), nil, []byte("slice"), []byte("again")}
	readSent(t, svc)
	for _, b := range svc.batches[1:3] {
		b.Release()
	}
	big.Release()
	if held.n != 0 {
		t.Fatalf("%d bytes still counted as held after every batch was released", held.n)
	}
	waitShared(t, base)
}

// A message whose body pieces lie in shared buffers is encoded as the same FlightData, in
// several buffers (the shared pieces among them) instead of one.
func TestSharedEncodingIsFlightData(t *testing.T) {
	base := sharedLive.Load()
	alloc := NewAllocator(&counter{})
	batch := testBatch(alloc, 0, 5000)
	var sent []encodedMessage
	s := &sender{stream: captureStream{sent: &sent}, appMetadata: []byte("runs")}
	w := ipc.NewWriterWithPayloadWriter(s, ipc.WithSchema(testSchema))
	if err := w.Write(batch); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	last := sent[len(sent)-1]
	want, err := proto.Marshal(last.fields)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(last.encoded, want) {
		t.Fatalf("encoded as %d bytes that differ from FlightData's %d", len(last.encoded), len(want))
	}
	if last.buffers < 3 {
		t.Fatalf("the batch was encoded in %d buffers: its large pieces were copied", last.buffers)
	}
	batch.Release()
	waitShared(t, base)
}

// A buffer the batches released while gRPC still holds a message that refers to it is not
// handed out again, nor counted, until gRPC frees the message; then it is back in the pool.
func TestASharedBufferWaitsForGRPC(t *testing.T) {
	base := sharedLive.Load()
	held := &counter{}
	alloc := NewAllocator(held)
	b := alloc.Allocate(64 << 10)
	for i := range b {
		b[i] = byte(i)
	}
	inFlight := sharedPiece(b)
	if inFlight == nil {
		t.Fatal("a piece that starts a buffer of the allocator was not shared")
	}
	if sharedPiece(b[1:]) != nil || sharedPiece(make([]byte, 64<<10)) != nil || sharedPiece(b[:100]) != nil {
		t.Fatal("a piece that does not start a buffer of the allocator, or a small one, was shared")
	}
	alloc.Free(b)
	if held.n != 0 {
		t.Fatalf("%d bytes counted after the batches released the buffer", held.n)
	}
	var again [][]byte
	for range 50 {
		c := alloc.Allocate(64 << 10)
		if addressOf(c) == addressOf(b) {
			t.Fatal("a buffer gRPC still sends was handed out again")
		}
		again = append(again, c)
	}
	if data := inFlight.ReadOnlyData(); data[1000] != byte(1000%256) {
		t.Fatal("the bytes gRPC sends changed while it held them")
	}
	for _, c := range again {
		alloc.Free(c)
	}
	if n := sharedLive.Load() - base; n != 1 {
		t.Fatalf("%d buffers out, want only the one gRPC holds", n)
	}
	inFlight.Free()
	waitShared(t, base)
}

// A client that goes away mid-stream leaves nothing counted as held once the batch is released,
// whatever gRPC does with the messages it had not sent.
func TestSharedBatchesOfAVanishedClient(t *testing.T) {
	for _, how := range []string{"cancel", "close"} {
		t.Run(how, func(t *testing.T) {
			held := &counter{}
			batch := testBatch(NewAllocator(held), 0, 20_000)
			vanishMidStream(t, batch, how)
			batch.Release()
			if held.n != 0 {
				t.Fatalf("%d bytes counted as held after the batch was released", held.n)
			}
		})
	}
}
