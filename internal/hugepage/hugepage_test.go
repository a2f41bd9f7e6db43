package hugepage

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// aligned returns n bytes of a fresh allocation starting at a 2 MiB boundary.
func aligned(n int) []byte {
	b := make([]byte, n+Size)
	off := (Size - int(uintptr(unsafe.Pointer(&b[0]))%Size)) % Size
	return b[off : off+n]
}

func TestStretchesLieWithinTheRanges(t *testing.T) {
	mem := aligned(8 * Size)
	for _, tc := range []struct {
		name   string
		ranges [][]byte
		want   []int // huge pages of mem, by index
	}{
		{"whole", [][]byte{mem}, []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"unaligned ends", [][]byte{mem[100 : 3*Size+5]}, []int{1, 2}},
		{"too short", [][]byte{mem[1 : Size+1]}, nil},
		// Adjacent pieces, out of order, and pieces 16 KiB apart are one range.
		{"pieces", [][]byte{mem[Size+4096 : 3*Size], mem[0 : Size+4096], mem[3*Size+maxGap : 5*Size]}, []int{0, 1, 2, 3, 4}},
		// Farther apart, the stretch across the gap is not theirs.
		{"gap", [][]byte{mem[0 : Size+Size/2], mem[Size+Size/2+maxGap+1 : 4*Size]}, []int{0, 2, 3}},
		{"empty", [][]byte{nil, mem[:0]}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stretches(tc.ranges)
			base := uintptr(unsafe.Pointer(&mem[0]))
			if len(got) != len(tc.want) {
				t.Fatalf("%d stretches, want %d", len(got), len(tc.want))
			}
			for i, at := range got {
				if at != base+uintptr(tc.want[i])*Size {
					t.Fatalf("stretch %d at offset %d, want huge page %d", i, at-base, tc.want[i])
				}
			}
		})
	}
}

// thpEnabled reports whether the kernel may collapse memory into huge pages here (MADV_COLLAPSE
// needs Linux 6.1 and transparent huge pages not disabled).
func thpEnabled() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && !strings.Contains(string(b), "[never]")
}

func TestCollapseKeepsTheBytes(t *testing.T) {
	mem := aligned(4*Size + 12345)
	for i := range mem {
		mem[i] = byte(i * 7)
	}
	n := Collapse([][]byte{mem})
	for i := range mem {
		if mem[i] != byte(i*7) {
			t.Fatalf("byte %d changed", i)
		}
	}
	if n < 0 || n > 4 {
		t.Fatalf("collapsed %d huge pages of 4", n)
	}
	if runtime.GOOS == "linux" && thpEnabled() && n == 0 {
		t.Logf("the kernel collapsed none of the 4 huge pages (before Linux 6.1, or no huge page free)")
	}
	t.Logf("collapsed %d of 4", n)
	runtime.KeepAlive(mem)
}
