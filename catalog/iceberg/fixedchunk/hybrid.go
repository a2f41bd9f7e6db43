package fixedchunk

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errTruncated is what a decoder reports when a page ends before the values it declares.
var errTruncated = errors.New("page data ends before its values")

// hybrid reads Parquet's RLE / bit-packing hybrid encoding of unsigned values of width bits
// (at most 32): a sequence of runs, each either one value repeated (RLE) or groups of 8 values
// bit-packed, least significant bit first. It hands out runs, not values, so that a caller can
// fill a repeated value or a range of definition levels without a loop per value.
type hybrid struct {
	data  []byte
	pos   int
	width uint
	mask  uint64
	// The current run: left values not yet handed out; for an RLE run value, for a bit-packed
	// run packed (its groups' bytes) and next (the index in it of the next value).
	left   int
	rle    bool
	value  uint32
	packed []byte
	next   int
}

func newHybrid(data []byte, width int) (*hybrid, error) {
	if width < 0 || width > 32 {
		return nil, fmt.Errorf("bit width %d is outside 0–32", width)
	}
	return &hybrid{data: data, width: uint(width), mask: 1<<uint(width) - 1}, nil
}

// run makes the next run current when the current one is spent.
func (h *hybrid) run() error {
	if h.left > 0 {
		return nil
	}
	header, n := binary.Uvarint(h.data[h.pos:])
	if n <= 0 {
		return errTruncated
	}
	h.pos += n
	if header&1 == 1 {
		groups := min(header>>1, 1<<28) // at most 2^31 values, as a page holds
		if groups == 0 {
			return errors.New("bit-packed run of no values")
		}
		// A writer may end the last run's bytes at its last value: keep what is there.
		size := min(groups*uint64(h.width), uint64(len(h.data)-h.pos))
		left := groups * 8
		if h.width > 0 {
			left = min(left, size*8/uint64(h.width))
		}
		if left == 0 {
			return errTruncated
		}
		h.rle, h.packed, h.next, h.left = false, h.data[h.pos:h.pos+int(size)], 0, int(left)
		h.pos += int(size)
		return nil
	}
	count := header >> 1
	if count == 0 {
		return errors.New("RLE run of no values")
	}
	nb := int(h.width+7) / 8
	if len(h.data)-h.pos < nb {
		return errTruncated
	}
	var v uint32
	for i := range nb {
		v |= uint32(h.data[h.pos+i]) << (8 * uint(i))
	}
	if uint64(v) > h.mask {
		return fmt.Errorf("RLE value %d wider than %d bits", v, h.width)
	}
	h.pos += nb
	h.rle, h.value, h.left = true, v, int(min(count, 1<<31))
	return nil
}

// unpack writes the next len(dst) values of the current bit-packed run, which holds them, to dst.
func (h *hybrid) unpack(dst []uint32) {
	w := h.width
	if w == 0 {
		clear(dst)
		h.next += len(dst)
		h.left -= len(dst)
		return
	}
	p := h.packed
	i := 0
	// Whole groups of 8 values (w bytes), from a group's start, while 8 bytes can be loaded past
	// the group's first byte.
	if h.next%8 == 0 {
		g := h.next / 8
		groups := min(len(dst)/8, max(len(p)-7, 0)/int(w)-g)
		if groups > 0 {
			unpackGroups(dst[:8*groups], p[g*int(w):], w, h.mask)
			i = 8 * groups
		}
	}
	bit := uint(h.next+i) * w
	for ; i < len(dst); i++ {
		var buf [8]byte
		copy(buf[:], p[bit>>3:])
		dst[i] = uint32(binary.LittleEndian.Uint64(buf[:]) >> (bit & 7) & h.mask)
		bit += w
	}
	h.next += len(dst)
	h.left -= len(dst)
}

// unpackGroups unpacks len(dst)/8 groups of 8 values of 0 < w ≤ 32 bits from p (which holds 8
// bytes past each group's w bytes): four values per 8-byte load up to 16 bits, two up to 29,
// one beyond.
func unpackGroups(dst []uint32, p []byte, w uint, mask uint64) {
	switch {
	case w <= 16:
		// Values 4..7 start at bit 4w: byte w/2, shifted by 4 when w is odd.
		half, shift := w/2, (w&1)*4
		for g := 0; g+8 <= len(dst); g += 8 {
			b := uint(g) / 8 * w
			lo := binary.LittleEndian.Uint64(p[b : b+8])
			hi := binary.LittleEndian.Uint64(p[b+half:b+half+8]) >> shift
			d := dst[g : g+8 : g+8]
			d[0] = uint32(lo & mask)
			d[1] = uint32(lo >> w & mask)
			d[2] = uint32(lo >> (2 * w) & mask)
			d[3] = uint32(lo >> (3 * w) & mask)
			d[4] = uint32(hi & mask)
			d[5] = uint32(hi >> w & mask)
			d[6] = uint32(hi >> (2 * w) & mask)
			d[7] = uint32(hi >> (3 * w) & mask)
		}
	case w <= 29:
		// Pair j starts at bit 2wj: byte 2wj/8, shifted by 2wj mod 8 (at most 6).
		o1, o2, o3 := 2*w>>3, 4*w>>3, 6*w>>3
		s1, s2, s3 := 2*w&7, 4*w&7, 6*w&7
		for g := 0; g+8 <= len(dst); g += 8 {
			q := p[uint(g)/8*w:]
			q = q[:o3+8]
			v0 := binary.LittleEndian.Uint64(q)
			v1 := binary.LittleEndian.Uint64(q[o1:]) >> s1
			v2 := binary.LittleEndian.Uint64(q[o2:]) >> s2
			v3 := binary.LittleEndian.Uint64(q[o3:]) >> s3
			d := dst[g : g+8 : g+8]
			d[0], d[1] = uint32(v0&mask), uint32(v0>>w&mask)
			d[2], d[3] = uint32(v1&mask), uint32(v1>>w&mask)
			d[4], d[5] = uint32(v2&mask), uint32(v2>>w&mask)
			d[6], d[7] = uint32(v3&mask), uint32(v3>>w&mask)
		}
	default:
		for i := range dst {
			bit := uint(i) * w
			dst[i] = uint32(binary.LittleEndian.Uint64(p[bit>>3:]) >> (bit & 7) & mask)
		}
	}
}

// skip passes over the next n values of the current run, which holds them.
func (h *hybrid) skip(n int) {
	h.next += n
	h.left -= n
}
