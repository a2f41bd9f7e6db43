package engine

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bufferRecycler is a memory.Allocator for buffers whose every byte the caller writes (the
// gathered columns of a training read): a freed buffer is handed out again, not zeroed, for
// the next allocation of its size. It keeps at most max freed buffers; once closed, or full,
// it frees into the allocator under it. A training read's windows are mostly of one size, so
// after the first window its columns reuse the buffers the previous window's batches had.
type bufferRecycler struct {
	under memory.Allocator
	max   int

	mu     sync.Mutex
	free   map[int][][]byte // by length
	kept   int
	closed bool
}

func newBufferRecycler(under memory.Allocator, max int) *bufferRecycler {
	return &bufferRecycler{under: under, max: max, free: map[int][][]byte{}}
}

func (r *bufferRecycler) Allocate(size int) []byte {
	r.mu.Lock()
	if bufs := r.free[size]; len(bufs) > 0 {
		b := bufs[len(bufs)-1]
		r.free[size] = bufs[:len(bufs)-1]
		r.kept--
		r.mu.Unlock()
		return b
	}
	r.mu.Unlock()
	return r.under.Allocate(size)
}

func (r *bufferRecycler) Reallocate(size int, b []byte) []byte {
	return r.under.Reallocate(size, b)
}

func (r *bufferRecycler) Free(b []byte) {
	r.mu.Lock()
	if !r.closed && r.kept < r.max {
		r.free[len(b)] = append(r.free[len(b)], b)
		r.kept++
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	r.under.Free(b)
}

// close frees the kept buffers; buffers freed later go straight to the allocator under it.
func (r *bufferRecycler) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, bufs := range r.free {
		for _, b := range bufs {
			r.under.Free(b)
		}
	}
	r.free, r.kept, r.closed = nil, 0, true
}
