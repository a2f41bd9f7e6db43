package node

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/mempool"
)

// epochBuffersKept bounds the freed buffers a runtime keeps for training reads: a few windows'
// columns (a 65,536-row window of 16 float32 features is 4 MiB).
const epochBuffersKept = 64 << 20

// bufferRecycler is a memory.Allocator for buffers whose every byte the caller writes (the
// gathered columns of training reads): a freed buffer is handed out again, not zeroed, for the
// next allocation of its size. It keeps freed buffers of at most max bytes in all; once closed,
// or full, it frees into the allocator under it. A node's training reads gather windows of
// mostly one size, so their columns reuse the buffers earlier windows' batches had, instead
// of having the runtime zero new ones.
//
// Every byte it holds, handed out or kept, is reserved from the process's pool (consumer
// "training reads"): a training read asks the pool first, which moves dataset partitions to
// disk when memory is short, and is counted even when the pool refuses, since failing the read
// a data node exists to serve would help nobody.
type bufferRecycler struct {
	under memory.Allocator
	max   int

	mu sync.Mutex
	// res holds what the recycler's buffers take (guarded by mu).
	res    *mempool.Reservation
	free   map[int][][]byte // by length
	kept   int              // bytes
	closed bool
}

func newBufferRecycler(under memory.Allocator, max int, pool *mempool.Pool) *bufferRecycler {
	return &bufferRecycler{under: under, max: max, free: map[int][][]byte{}, res: pool.Reserve(mempool.Consumer{Name: "training reads"})}
}

// reserve counts n more bytes (r.mu held).
func (r *bufferRecycler) reserve(n int) {
	if err := r.res.TryGrow(int64(n)); err != nil {
		r.res.Grow(int64(n))
	}
}

func (r *bufferRecycler) Allocate(size int) []byte {
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

func (r *bufferRecycler) Reallocate(size int, b []byte) []byte {
	r.mu.Lock()
	if grow := size - len(b); grow > 0 {
		r.reserve(grow)
	} else {
		r.res.Shrink(int64(-grow))
	}
	r.mu.Unlock()
	return r.under.Reallocate(size, b)
}

func (r *bufferRecycler) Free(b []byte) {
	r.mu.Lock()
	if !r.closed && r.kept+len(b) <= r.max {
		r.free[len(b)] = append(r.free[len(b)], b)
		r.kept += len(b)
		r.mu.Unlock()
		return
	}
	r.res.Shrink(int64(len(b)))
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
			r.res.Shrink(int64(len(b)))
		}
	}
	r.free, r.kept, r.closed = nil, 0, true
}
