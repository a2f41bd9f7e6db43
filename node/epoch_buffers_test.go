package node

import (
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A freed buffer comes back for the next allocation of its size; closing frees what is kept,
// and what is freed after goes straight to the allocator under it.
func TestBufferRecycler(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	r := newBufferRecycler(mem, 256)
	a, b, c := r.Allocate(128), r.Allocate(128), r.Allocate(64)
	r.Free(a)
	r.Free(b)
	r.Free(c) // over max: freed under
	if mem.CurrentAlloc() != 256 {
		t.Fatalf("%d bytes allocated, want the two kept buffers' 256", mem.CurrentAlloc())
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
}
