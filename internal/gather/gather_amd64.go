package gather

import (
	"math"

	"golang.org/x/sys/cpu"
)

// useAVX2 says whether this processor has the gather instructions.
var useAVX2 = cpu.X86.HasAVX2

// fast32 gathers with AVX2 when the processor has it and reports whether it did so for every
// index (false: none were gathered, or an index is out of range and pick must panic).
func fast32(dst, src []uint32, idx []int32) bool {
	if !useAVX2 || len(idx) == 0 || len(src) == 0 || len(src) > math.MaxInt32 {
		return false
	}
	return gather32(&dst[0], &src[0], &idx[0], len(idx), uint32(len(src)-1))
}

func fast64(dst, src []uint64, idx []int32) bool {
	if !useAVX2 || len(idx) == 0 || len(src) == 0 || len(src) > math.MaxInt32 {
		return false
	}
	return gather64(&dst[0], &src[0], &idx[0], len(idx), uint32(len(src)-1))
}

//go:noescape
func gather32(dst, src *uint32, idx *int32, n int, last uint32) bool

//go:noescape
func gather64(dst, src *uint64, idx *int32, n int, last uint32) bool
