package mempool

import (
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Recycler is a memory.Allocator for buffers whose every byte the caller writes (decoded or
// gathered columns): a freed buffer is handed out again, not zeroed, for the next allocation of
// its length. It keeps freed buffers of at most max bytes in all; once closed, or full, it frees
// into the allocator under it. A producer of batches of one size then reuses the buffers its
// earlier batches had, once their consumers release them, instead of having the runtime zero
// (and the kernel fault in) new ones. It is safe for concurrent use.
//
// Every byte it holds, handed out or kept, is reserved from the pool it was made with, for its
// consumer, and counted even when the pool refuses: a recycler stands for allocations its
// caller would make anyway.
//
// In a test binary a freed buffer is overwritten before it is kept, so that code reading a
// buffer after releasing it reads garbage, not what it expects.
type Recycler struct {
	under memory.Allocator
	max   int

	mu sync.Mutex
	// res holds what the recycler's buffers take (guarded by mu).
	res    *Reservation
	free   map[int][][]byte // by length
	kept   int              // bytes
	closed bool
}

// NewRecycler recycles buffers of under, keeping at most max bytes of freed ones, and reserves
// what it holds from pool as consumer.
func NewRecycler(under memory.Allocator, max int, pool *Pool, consumer string) *Recycler {
	return &Recycler{under: under, max: max, free: map[int][][]byte{}, res: pool.Reserve(Consumer{Name: consumer})}
}

// reserve counts n more bytes (r.mu held).
func (r *Recycler) reserve(n int) {
	if err := r.res.TryGrow(int64(n)); err != nil {
		r.res.Grow(int64(n))
	}
}

// Allocate returns a buffer of size bytes whose contents are undefined.
func (r *Recycler) Allocate(size int) []byte {
	r.mu.Lock()
	if bufs := r.free[size]; len(bufs) > 0 {
		b := bufs[len(bufs)-1]
		r.free[size] = bufs[:len(bufs)-1]
		r.kept -= size
		r.mu.Unlock()
		return b
	}
	r.reserve(size)
	r.mu.Unlock()
	return r.under.Allocate(size)
}

func (r *Recycler) Reallocate(size int, b []byte) []byte {
	r.mu.Lock()
	if grow := size - len(b); grow > 0 {
		r.reserve(grow)
	} else {
		r.res.Shrink(int64(-grow))
	}
	r.mu.Unlock()
	return r.under.Reallocate(size, b)
}

func (r *Recycler) Free(b []byte) {
	r.mu.Lock()
	if !r.closed && r.kept+len(b) <= r.max {
		if testing.Testing() {
			for i := range b {
				b[i] = 0xA5
			}
		}
		r.free[len(b)] = append(r.free[len(b)], b)
		r.kept += len(b)
		r.mu.Unlock()
		return
	}
	r.res.Shrink(int64(len(b)))
	r.mu.Unlock()
	r.under.Free(b)
}

// Close frees the kept buffers; buffers freed later go straight to the allocator under it.
func (r *Recycler) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, bufs := range r.free {
		for _, b := range bufs {
			r.under.Free(b)
			r.res.Shrink(int64(len(b)))
		}
	}
	r.free, r.kept, r.closed = nil, 0, true
}
