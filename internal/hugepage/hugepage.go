// Package hugepage asks the kernel to back long-lived memory with huge pages.
//
// Memory read at random, such as a training read picking rows from a dataset's partitions,
// spends much of its time translating addresses when every 4 KiB page needs its own entry in
// the processor's translation buffer; a 2 MiB huge page needs one. Where transparent huge pages
// are enabled only for memory that asks for them (the "madvise" setting, common), Go's heap
// gets none, so the memory of a partition is collapsed into huge pages once it is made.
package hugepage

import (
	"cmp"
	"slices"
	"unsafe"
)

// Size is the size of a huge page (x86-64 and arm64 with 4 KiB base pages).
const Size = 2 << 20

// maxGap is the largest distance between two byte ranges that Collapse treats as one: the
// unused end of a heap span between two buffers allocated one after the other.
const maxGap = 16 << 10

// Collapse asks the kernel to back with huge pages every aligned 2 MiB stretch that lies within
// the memory of ranges (slices the caller holds: their memory must stay alive during the call),
// taking ranges no more than 16 KiB apart as one, so that no memory outside them is touched.
// It is best effort: where the kernel cannot (no huge pages free, transparent huge pages
// disabled, a kernel before Linux 6.1, another system) nothing changes. It returns how many
// huge pages now back the ranges.
func Collapse(ranges [][]byte) int {
	collapsed := 0
	for _, at := range stretches(ranges) {
		if collapse(at) {
			collapsed++
		}
	}
	return collapsed
}

// stretches returns the addresses of the aligned 2 MiB stretches within ranges, taken as
// Collapse takes them, in ascending order.
func stretches(ranges [][]byte) []uintptr {
	type span struct{ lo, hi uintptr }
	spans := make([]span, 0, len(ranges))
	for _, r := range ranges {
		if len(r) > 0 {
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(r)))
			spans = append(spans, span{lo, lo + uintptr(len(r))})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	var out []uintptr
	for i := 0; i < len(spans); {
		lo, hi := spans[i].lo, spans[i].hi
		for i++; i < len(spans) && spans[i].lo <= hi+maxGap; i++ {
			hi = max(hi, spans[i].hi)
		}
		for at := (lo + Size - 1) &^ (Size - 1); at+Size <= hi; at += Size {
			out = append(out, at)
		}
	}
	return out
}
