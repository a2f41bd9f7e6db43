package mempool

import (
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A freed buffer comes back for the next allocation of its size (overwritten, in a test binary);
// closing frees what is kept, and what is freed after goes straight to the allocator under it.
func TestRecycler(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	pool := New(1 << 20)
	r := NewRecycler(mem, 256, pool, "test")
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
	if b[0] != 0xA5 || b[127] != 0xA5 {
		t.Error("a kept buffer still holds what was written to it before it was freed")
	}
	again := r.Allocate(128)
	if unsafe.SliceData(again) != unsafe.SliceData(b) {
		t.Fatal("a freed buffer of the size asked for was not handed out again")
	}
	other := r.Allocate(64)
	r.Close()
	r.Free(again)
	r.Free(other)
	mem.AssertSize(t, 0)
	if got := pool.Stats().Reserved; got != 0 {
		t.Errorf("%d bytes still reserved", got)
	}
	// A full pool does not fail a training read: its buffers are counted all the same.
	full := New(64)
	r = NewRecycler(mem, 0, full, "test")
	buf := r.Allocate(128)
	if full.Stats().Reserved != 128 {
		t.Errorf("a buffer past the limit is not counted: %+v", full.Stats())
	}
	r.Free(buf)
	mem.AssertSize(t, 0)
}
