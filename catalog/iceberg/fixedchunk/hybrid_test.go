package fixedchunk

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// encodeHybrid writes values in the RLE / bit-packing hybrid encoding at width w, as runs of
// the lengths given: a run of one repeated value is RLE-encoded, any other bit-packed (the last
// run padded to whole groups of 8; others hold whole groups, as writers make them).
func encodeHybrid(values []uint32, w int, runs []int, rle []bool) []byte {
	var out []byte
	at := 0
	for i, n := range runs {
		run := values[at : at+n]
		at += n
		if rle[i] {
			out = binary.AppendUvarint(out, uint64(n)<<1)
			for b := 0; b < (w+7)/8; b++ {
				out = append(out, byte(run[0]>>(8*b)))
			}
			continue
		}
		groups := (n + 7) / 8
		out = binary.AppendUvarint(out, uint64(groups)<<1|1)
		packed := make([]byte, groups*w)
		for j := range groups * 8 {
			v := uint64(0x5A5A5A5A) & (1<<w - 1)
			if j < n {
				v = uint64(run[j])
			}
			for b := range w {
				if v>>b&1 == 1 {
					bit := j*w + b
					packed[bit/8] |= 1 << (bit % 8)
				}
			}
		}
		out = append(out, packed...)
	}
	return out
}

// Every width from 0 to 32 decodes what was encoded, through runs of both kinds, read in
// pieces of every alignment.
func TestHybridDecodesEveryWidth(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for w := 0; w <= 32; w++ {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			var values []uint32
			var runs []int
			var rle []bool
			for i := range 40 {
				n := 1 + r.IntN(300)
				isRLE := r.IntN(3) == 0
				if !isRLE && i < 39 {
					n = 8 * (1 + r.IntN(40))
				}
				v := uint32(r.Uint64() & (1<<w - 1))
				for j := range n {
					if !isRLE && j > 0 {
						v = uint32(r.Uint64() & (1<<w - 1))
					}
					values = append(values, v)
				}
				runs, rle = append(runs, n), append(rle, isRLE)
			}
			data := encodeHybrid(values, w, runs, rle)
			h, err := newHybrid(data, w)
			if err != nil {
				t.Fatal(err)
			}
			var got []uint32
			for len(got) < len(values) {
				if err := h.run(); err != nil {
					t.Fatalf("after %d of %d values: %v", len(got), len(values), err)
				}
				c := min(h.left, 1+r.IntN(100), len(values)-len(got))
				if h.rle {
					for range c {
						got = append(got, h.value)
					}
					h.skip(c)
					continue
				}
				dst := make([]uint32, c)
				h.unpack(dst)
				got = append(got, dst...)
			}
			if !slices.Equal(got, values) {
				for i := range got {
					if got[i] != values[i] {
						t.Fatalf("value %d: got %d, want %d", i, got[i], values[i])
					}
				}
			}
		})
	}
}

// A run header past the data's end, an RLE value wider than the width, or runs of no values
// are errors.
func TestHybridRefusesMalformedRuns(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
		w    int
	}{
		{"no header", nil, 3},
		{"RLE value missing", []byte{8 << 1}, 3},
		{"RLE value too wide", []byte{8 << 1, 0xFF}, 3},
		{"empty RLE run", []byte{0, 1}, 3},
		{"empty bit-packed run", []byte{1}, 3},
		{"bit-packed bytes missing", []byte{2<<1 | 1}, 3},
	} {
		h, err := newHybrid(c.data, c.w)
		if err == nil {
			err = h.run()
		}
		if err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if _, err := newHybrid(nil, 33); err == nil {
		t.Error("a width of 33 bits is taken")
	}
}
