package flightwire

import (
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"google.golang.org/grpc/mem"
)

// Allocator is a memory.Allocator for the buffers of batches a Writer sends without copying
// them: the message refers to such a buffer, and gRPC's transport reads it where the batch
// holds it. A buffer is handed out again only once the batches holding it have released it and
// gRPC has written it out. A buffer gRPC never hands back (its connection broke with the message
// unsent) is left to the garbage collector.
//
// While batches hold a buffer its capacity is counted in the allocator's reservation; a buffer
// that only gRPC still holds is in flight, as every message being sent is, and counted nowhere.
// Buffers are not zeroed: the caller writes every byte it uses. It is safe for concurrent use.
type Allocator struct {
	mu  sync.Mutex // serializes res's calls
	res Reservation
}

// Reservation counts the bytes an Allocator's batches hold (mempool.Reservation is one); the
// Allocator calls it from one goroutine at a time.
type Reservation interface {
	Grow(n int64)
	Shrink(n int64)
}

// NewAllocator returns an allocator whose held buffers are counted in res.
func NewAllocator(res Reservation) *Allocator { return &Allocator{res: res} }

// sharedBuffers maps the first byte of every buffer an Allocator has handed out, and batches
// still hold, to the buffer (the key is the address; the entry goes before the buffer can be
// handed out again).
var sharedBuffers sync.Map // uintptr → *sharedBuffer

// sharedLive counts the buffers Allocators have handed out and not yet had back (tests watch
// it drain).
var sharedLive atomic.Int64

// sharedBuffer is a buffer of an Allocator: one reference for the batches holding it, one for
// each message gRPC has not yet written out.
type sharedBuffer struct {
	buf  *[]byte
	refs atomic.Int32
}

func addressOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func (a *Allocator) Allocate(size int) []byte {
	if size == 0 {
		return []byte{}
	}
	s := &sharedBuffer{buf: encodedPool.Get(size)}
	s.refs.Store(1)
	sharedLive.Add(1)
	a.mu.Lock()
	a.res.Grow(int64(cap(*s.buf)))
	a.mu.Unlock()
	sharedBuffers.Store(addressOf(*s.buf), s)
	return *s.buf
}

func (a *Allocator) Reallocate(size int, b []byte) []byte {
	out := a.Allocate(size)
	copy(out, b)
	a.Free(b)
	return out
}

// Free releases the batches' reference to b; b goes back to the pool once gRPC has written out
// every message that refers to it.
func (a *Allocator) Free(b []byte) {
	if len(b) == 0 {
		return
	}
	v, ok := sharedBuffers.LoadAndDelete(addressOf(b))
	if !ok {
		panic("flightwire: freeing a buffer the allocator did not hand out")
	}
	s := v.(*sharedBuffer)
	a.mu.Lock()
	a.res.Shrink(int64(cap(*s.buf)))
	a.mu.Unlock()
	s.release()
}

func (s *sharedBuffer) release() {
	if s.refs.Add(-1) > 0 {
		return
	}
	if testing.Testing() {
		// Whatever still reads the buffer now reads garbage, not what it expects.
		b := (*s.buf)[:cap(*s.buf)]
		for i := range b {
			b[i] = 0xA5
		}
	}
	sharedLive.Add(-1)
	encodedPool.Put(s.buf)
}

// sharedMin is the smallest body piece sent without a copy; a smaller one costs gRPC more as a
// buffer of its own than its copy costs.
const sharedMin = 4 << 10

// sharedPiece returns a buffer that refers to p without copying it when p starts a buffer an
// Allocator handed out and batches still hold (they hold it while the message is encoded),
// else nil. The buffer keeps p's memory from being handed out again until gRPC frees it.
func sharedPiece(p []byte) mem.Buffer {
	if len(p) < sharedMin {
		return nil
	}
	v, ok := sharedBuffers.Load(addressOf(p))
	if !ok {
		return nil
	}
	s := v.(*sharedBuffer)
	if len(p) > len(*s.buf) {
		return nil
	}
	s.refs.Add(1)
	ref := &sentPiece{data: p, from: s}
	return mem.NewBuffer(&ref.data, returnSent{})
}

// sentPiece is a body piece gRPC sends from a shared buffer. data must stay its first field:
// gRPC hands &data back (returnSent.Put).
type sentPiece struct {
	data []byte
	from *sharedBuffer
}

// returnSent is the mem.BufferPool of sent pieces: gRPC puts a piece back once it has written it.
type returnSent struct{}

func (returnSent) Get(length int) *[]byte {
	b := make([]byte, length)
	return &b
}

func (returnSent) Put(b *[]byte) { (*sentPiece)(unsafe.Pointer(b)).from.release() }
