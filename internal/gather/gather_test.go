package gather

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Every length (the vector blocks and the elements after them), every source size, and
// sources and destinations at any offset gather what the plain loop gathers.
func TestGatherIsThePlainLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, srcLen := range []int{1, 2, 7, 100, 4096, 100_000} {
		src32 := make([]uint32, srcLen+3)
		src64 := make([]uint64, srcLen+3)
		for i := range src32 {
			src32[i], src64[i] = rng.Uint32(), rng.Uint64()
		}
		for n := range 40 {
			for _, off := range []int{0, 1, 3} {
				idx := make([]int32, n+off)
				for i := range idx {
					idx[i] = int32(rng.IntN(srcLen))
				}
				s32, s64, ix := src32[off:off+srcLen], src64[off:off+srcLen], idx[off:]
				got32, want32 := make([]uint32, n+off), make([]uint32, n)
				got64, want64 := make([]uint64, n+off), make([]uint64, n)
				Uint32(got32[off:], s32, ix)
				Uint64(got64[off:], s64, ix)
				pick(want32, s32, ix)
				pick(want64, s64, ix)
				if !slices.Equal(got32[off:], want32) || !slices.Equal(got64[off:], want64) {
					t.Fatalf("source of %d, %d indices at offset %d: gathered other elements", srcLen, n, off)
				}
			}
		}
	}
}

// An index past the source's end, or negative, panics, wherever it is (in a vector block or
// after the last one); the last element is in range.
func TestAnIndexOutOfRangePanics(t *testing.T) {
	src32, src64 := make([]uint32, 50), make([]uint64, 50)
	for _, n := range []int{1, 5, 8, 13, 40} {
		for _, at := range []int{0, n / 2, n - 1} {
			for _, bad := range []int32{50, 1 << 30, -1, -1 << 31} {
				idx := make([]int32, n)
				for i := range idx {
					idx[i] = 49
				}
				idx[at] = bad
				for name, f := range map[string]func(){
					"Uint32": func() { Uint32(make([]uint32, n), src32, idx) },
					"Uint64": func() { Uint64(make([]uint64, n), src64, idx) },
				} {
					if !panics(f) {
						t.Fatalf("%s: index %d at %d of %d did not panic", name, bad, at, n)
					}
				}
				idx[at] = 49
				if panics(func() { Uint32(make([]uint32, n), src32, idx); Uint64(make([]uint64, n), src64, idx) }) {
					t.Fatal("indices in range panicked")
				}
			}
		}
	}
	if !panics(func() { Uint32(make([]uint32, 1), nil, []int32{0}) }) {
		t.Fatal("an index into an empty source did not panic")
	}
	if !panics(func() { Uint32(make([]uint32, 2), make([]uint32, 9), make([]int32, 3)) }) {
		t.Fatal("a destination shorter than the indices did not panic")
	}
}

func panics(f func()) (did bool) {
	defer func() { did = recover() != nil }()
	f()
	return false
}

// BenchmarkGather picks 26,000 4-byte elements in runs of about 128 from six 4,096-element
// sources (a training read's part of a column), as Uint32 does and as the plain loop does.
func BenchmarkGather(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	sources := make([][]uint32, 6)
	for k := range sources {
		sources[k] = make([]uint32, 4096)
	}
	type run struct{ source, n int }
	var runs []run
	var idx []int32
	for len(idx) < 26_000 {
		r := run{rng.IntN(len(sources)), 100 + rng.IntN(60)}
		for range r.n {
			idx = append(idx, int32(rng.IntN(4096)))
		}
		runs = append(runs, r)
	}
	dst := make([]uint32, len(idx))
	for name, f := range map[string]func(dst, src []uint32, idx []int32){"Uint32": Uint32, "loop": pick[uint32]} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				at := 0
				for _, r := range runs {
					f(dst[at:at+r.n], sources[r.source], idx[at:at+r.n])
					at += r.n
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(idx)), "ns/element")
		})
	}
}
