package node

import (
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/mempool"
)

// A freed buffer comes back for the next allocation of its size; closing frees what is kept,
// and what is freed after goes straight to the allocator under it.
func TestBufferRecycler(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	pool := mempool.New(1 << 20)
	r := newBufferRecycler(mem, 256, pool)
	a, b, c := r.Allocate(128), r.Allocate(128), r.Allocate(64)
	if got := pool.Stats().Reserved; got != 320 {
		t.Fatalf("%d bytes reserved for 320 handed out", got)
	}
	r.Free(a)
	r.Free(b)
	r.Free(c) // over max: freed under
	if mem.CurrentAlloc() != 256 || pool.Stats().Reserved != 256 {
		t.Fatalf("%d bytes allocated, %d reserved, want the two kept buffers' 256", mem.CurrentAlloc(), pool.Stats().Reserved)
	}
	again := r.Allocate(128)
	if unsafe.SliceData(again) != unsafe.SliceData(b) {
		t.Fatal("a freed buffer of the size asked for was not handed out again")
	}
	other := r.Allocate(64)
	r.close()
	r.Free(again)
	r.Free(other)
	mem.AssertSize(t, 0)
	if got := pool.Stats().Reserved; got != 0 {
		t.Errorf("%d bytes still reserved", got)
	}
	// A full pool does not fail a training read: its buffers are counted all the same.
	full := mempool.New(64)
	r = newBufferRecycler(mem, 0, full)
	buf := r.Allocate(128)
	if full.Stats().Reserved != 128 {
		t.Errorf("a buffer past the limit is not counted: %+v", full.Stats())
	}
	r.Free(buf)
	mem.AssertSize(t, 0)
}
