package fixedchunk

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkUnpack(b *testing.B) {
	for _, w := range []int{1, 4, 7, 12, 13, 17, 20, 31} {
		b.Run(fmt.Sprint(w), func(b *testing.B) {
			n := 1 << 16
			data := make([]byte, n*w/8+16)
			for i := range data {
				data[i] = byte(rand.Uint32())
			}
			dst := make([]uint32, 1024)
			b.SetBytes(int64(n))
			for b.Loop() {
				h := &hybrid{width: uint(w), mask: 1<<uint(w) - 1, packed: data, left: n}
				for h.left > 0 {
					h.unpack(dst)
				}
			}
		})
	}
}
