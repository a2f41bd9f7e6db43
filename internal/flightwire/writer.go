// Package flightwire sends Arrow record batches as Flight data (FlightData messages) over a
// gRPC stream with one copy of their bytes.
//
// arrow-go's flight.Writer copies each message's body into a buffer of its own, then gRPC's
// proto codec allocates the encoded message (zeroed) and copies the body into it: three passes
// over every byte before gRPC's transport copies it into its frames. Here the message is
// encoded straight from the batch's buffers into a buffer reused from message to message (not
// zeroed): one pass. The batch is the caller's again as soon as Write returns, whatever becomes
// of the stream; a buffer gRPC never returns (its connection broke with the message unsent) is
// collected as garbage. The large buffers of a batch made with an Allocator are not copied at
// all: the message refers to them (shared.go).
//
// A server sending with Writer must encode with Codec (grpc.ForceServerCodecV2(Codec())); every
// other message is encoded and decoded as by gRPC's proto codec.
package flightwire

import (
	"errors"
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// Writer writes record batches of one schema to a stream as Flight data: the schema first (on
// the first Write, or at Close when nothing was written), then each batch after the
// dictionaries it needs. It is not safe for concurrent use.
type Writer struct {
	ipc    *ipc.Writer
	sender *sender
}

// NewWriter returns a writer of batches of schema to stream, whose server encodes with Codec.
func NewWriter(stream grpc.ServerStream, schema *arrow.Schema) *Writer {
	s := &sender{stream: stream}
	return &Writer{ipc: ipc.NewWriterWithPayloadWriter(s, ipc.WithSchema(schema)), sender: s}
}

// Write sends rec, with appMetadata (nil for none) on its message and on the dictionary
// messages sent before it.
func (w *Writer) Write(rec arrow.RecordBatch, appMetadata []byte) error {
	w.sender.appMetadata = appMetadata
	defer func() { w.sender.appMetadata = nil }()
	return w.ipc.Write(rec)
}

// Close sends the schema if no batch was written (it sends nothing else) and releases the
// dictionaries the writer keeps: call it when done with the writer, whatever happened before;
// a second call does nothing.
func (w *Writer) Close() error { return w.ipc.Close() }

// sender is the ipc.PayloadWriter of a Writer: each payload becomes one message, encoded while
// the payload's buffers are held.
type sender struct {
	stream      grpc.ServerStream
	appMetadata []byte
}

func (s *sender) Start() error { return nil }
func (s *sender) Close() error { return nil }

func (s *sender) WritePayload(p ipc.Payload) error {
	m := &message{appMetadata: s.appMetadata}
	if meta := p.Meta(); meta != nil {
		defer meta.Release()
		m.header = meta.Bytes()
	}
	if err := p.SerializeBody(&m.body); err != nil {
		return err
	}
	return s.stream.SendMsg(m)
}

// bodyPieces collects a payload's body as ipc.Payload.SerializeBody writes it: the payload's
// buffers and their padding. Unlike an io.Writer it keeps the slices it is given, which stay
// valid while the payload is held (until WritePayload returns), so the body is copied once,
// when the message is encoded.
type bodyPieces [][]byte

func (b *bodyPieces) Write(p []byte) (int, error) {
	*b = append(*b, p)
	return len(p), nil
}

// message is one FlightData message: IPC metadata (header), application metadata and a body.
// Its slices must stay valid until it is encoded (sent).
type message struct {
	header, appMetadata []byte
	body                bodyPieces
}

// FlightData field numbers (Flight.proto).
const (
	fieldDataHeader  = 2
	fieldAppMetadata = 3
	fieldDataBody    = 1000
)

// encodedPool holds the buffers of encoded messages: gRPC returns each once its transport has
// copied it out.
var encodedPool = &bufferPool{}

// bufferPool is a mem.BufferPool of buffers whose capacities are powers of two, handed out as
// they were left: encode overwrites every byte it sends (gRPC's pools zero a buffer on reuse).
type bufferPool struct {
	classes [bits.UintSize]sync.Pool
}

func (p *bufferPool) Get(size int) *[]byte {
	class := bits.Len(uint(max(size, 1) - 1))
	if b, ok := p.classes[class].Get().(*[]byte); ok {
		*b = (*b)[:size]
		return b
	}
	b := make([]byte, size, 1<<class)
	return &b
}

func (p *bufferPool) Put(b *[]byte) {
	if c := cap(*b); c > 0 && c&(c-1) == 0 {
		p.classes[bits.Len(uint(c-1))].Put(b)
	}
}

// encode returns m as a FlightData message (its fields in field-number order, as gRPC's proto
// codec writes them): in one buffer, or, when body pieces lie in buffers of an Allocator, in
// buffers that refer to those pieces and one that holds the rest.
func (m *message) encode() mem.BufferSlice {
	bodyLen := 0
	for _, p := range m.body {
		bodyLen += len(p)
	}
	if bodyLen >= sharedMin {
		var shared []mem.Buffer
		for i, p := range m.body {
			if b := sharedPiece(p); b != nil {
				if shared == nil {
					shared = make([]mem.Buffer, len(m.body))
				}
				shared[i] = b
			}
		}
		if shared != nil {
			return m.encodeShared(shared, bodyLen)
		}
	}
	size := m.prefixSize(bodyLen) + bodyLen
	var buf *[]byte
	if mem.IsBelowBufferPoolingThreshold(size) {
		b := make([]byte, 0, size)
		buf = &b
	} else {
		buf = encodedPool.Get(size)
	}
	out := m.appendPrefix((*buf)[:0], bodyLen)
	for _, p := range m.body {
		out = append(out, p...)
	}
	*buf = out
	if mem.IsBelowBufferPoolingThreshold(size) {
		return mem.BufferSlice{mem.SliceBuffer(out)}
	}
	return mem.BufferSlice{mem.NewBuffer(buf, encodedPool)}
}

// encodeShared encodes m with its body pieces shared[i] (nil where a piece is copied): the
// message's other bytes (fields before the body, pieces not shared) are copied into one buffer,
// cut where shared pieces go between them.
func (m *message) encodeShared(shared []mem.Buffer, bodyLen int) mem.BufferSlice {
	copied := m.prefixSize(bodyLen)
	for i, p := range m.body {
		if shared[i] == nil {
			copied += len(p)
		}
	}
	buf := m.appendPrefix(make([]byte, 0, copied), bodyLen)
	out := make(mem.BufferSlice, 0, 2*len(shared)+1)
	from := 0 // where buf's bytes not yet in out begin
	for i, p := range m.body {
		if shared[i] == nil {
			buf = append(buf, p...)
			continue
		}
		if from < len(buf) {
			out = append(out, mem.SliceBuffer(buf[from:len(buf):len(buf)]))
			from = len(buf)
		}
		out = append(out, shared[i])
	}
	if from < len(buf) {
		out = append(out, mem.SliceBuffer(buf[from:]))
	}
	return out
}

// prefixSize is the size of m's fields before the body's bytes (the body's tag and length
// included) for a body of bodyLen bytes.
func (m *message) prefixSize(bodyLen int) int {
	size := 0
	if len(m.header) > 0 {
		size += protowire.SizeTag(fieldDataHeader) + protowire.SizeBytes(len(m.header))
	}
	if len(m.appMetadata) > 0 {
		size += protowire.SizeTag(fieldAppMetadata) + protowire.SizeBytes(len(m.appMetadata))
	}
	if bodyLen > 0 {
		size += protowire.SizeTag(fieldDataBody) + protowire.SizeVarint(uint64(bodyLen))
	}
	return size
}

// appendPrefix appends m's fields before the body's bytes (prefixSize of them).
func (m *message) appendPrefix(out []byte, bodyLen int) []byte {
	if len(m.header) > 0 {
		out = protowire.AppendTag(out, fieldDataHeader, protowire.BytesType)
		out = protowire.AppendBytes(out, m.header)
	}
	if len(m.appMetadata) > 0 {
		out = protowire.AppendTag(out, fieldAppMetadata, protowire.BytesType)
		out = protowire.AppendBytes(out, m.appMetadata)
	}
	if bodyLen > 0 {
		out = protowire.AppendTag(out, fieldDataBody, protowire.BytesType)
		out = protowire.AppendVarint(out, uint64(bodyLen))
	}
	return out
}

// Codec returns the gRPC codec of a server that sends with Writer: its messages are encoded in one
// copy, every other message as by gRPC's proto codec (whose name it has).
func Codec() encoding.CodecV2 {
	return codec{base: encoding.GetCodecV2(grpcproto.Name)}
}

type codec struct{ base encoding.CodecV2 }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(*message); ok {
		return m.encode(), nil
	}
	return c.base.Marshal(v)
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if _, ok := v.(*message); ok {
		return errors.New("flightwire: a message is only sent")
	}
	return c.base.Unmarshal(data, v)
}

func (c codec) Name() string { return c.base.Name() }
