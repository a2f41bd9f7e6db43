package exec

import (
	"cmp"
)

// Bit-packed comparison kernels: they compare every element of a typed slice with one constant
// and write the outcomes as an Arrow bitmap (bit i is row i, least significant bit first), eight
// rows per output byte, with no function call per row. They back compareConstExpr.

// constCmp is a comparison operator with the non-constant operand on the left: v op c.
type constCmp uint8

const (
	constEQ constCmp = iota // v = c
	constNE                 // v <> c
	constLT                 // v < c
	constLE                 // v <= c
	constGT                 // v > c
	constGE                 // v >= c
)

// constCmpOf maps a comparison operator name to a constCmp; with constantLeft the constant is the
// left operand (c op v), so the operator is mirrored to keep v on the left.
func constCmpOf(op string, constantLeft bool) (constCmp, bool) {
	var c constCmp
	switch op {
	case "=", "<=>":
		c = constEQ
	case "<>", "!=":
		c = constNE
	case "<":
		c = constLT
	case "<=":
		c = constLE
	case ">":
		c = constGT
	case ">=":
		c = constGE
	default:
		return 0, false
	}
	if constantLeft {
		c = c.mirrored()
	}
	return c, true
}

// mirrored is the operator with its operands swapped: c < v is v > c.
func (c constCmp) mirrored() constCmp {
	switch c {
	case constLT:
		return constGT
	case constLE:
		return constGE
	case constGT:
		return constLT
	case constGE:
		return constLE
	}
	return c
}

// outcome is the truth value of v op c for a three-way comparison result r of v with c.
func (c constCmp) outcome(r int) bool {
	switch c {
	case constEQ:
		return r == 0
	case constNE:
		return r != 0
	case constLT:
		return r < 0
	case constLE:
		return r <= 0
	case constGT:
		return r > 0
	}
	return r >= 0
}

// compareOrderedBits writes bit i of out as vals[i] op c; out has at least (len(vals)+7)/8
// bytes. Bits past len(vals) in the last byte are unspecified.
//
// Floating-point values follow cmp.Compare (what the general comparison kernel uses): NaN is
// below every number and equal to NaN. The caller passes a c that is not NaN; then every
// operator is one of three base loops, or its negation: v > c, !(v >= c) (which is v < c, and
// true for a NaN v as cmp.Compare orders it) and v == c.
func compareOrderedBits[T cmp.Ordered](vals []T, c T, op constCmp, out []byte) {
	n := len(vals)
	negate := false
	switch op {
	case constEQ, constNE:
		eqBits(vals, c, out)
		negate = op == constNE
	case constGT, constLE:
		gtBits(vals, c, out)
		negate = op == constLE
	default:
		notGEBits(vals, c, out)
		negate = op == constGE
	}
	if negate {
		for i := range out[:(n+7)/8] {
			out[i] = ^out[i]
		}
	}
}

// bit is 1 for true and 0 for false; the compiler turns it into a flag move, not a branch.
func bit(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func gtBits[T cmp.Ordered](vals []T, c T, out []byte) {
	full := len(vals) &^ 7
	for i := 0; i < full; i += 8 {
		v := vals[i : i+8 : i+8]
		out[i>>3] = bit(v[0] > c) | bit(v[1] > c)<<1 | bit(v[2] > c)<<2 | bit(v[3] > c)<<3 |
			bit(v[4] > c)<<4 | bit(v[5] > c)<<5 | bit(v[6] > c)<<6 | bit(v[7] > c)<<7
	}
	if full < len(vals) {
		var b byte
		for j, x := range vals[full:] {
			b |= bit(x > c) << j
		}
		out[full>>3] = b
	}
}

func notGEBits[T cmp.Ordered](vals []T, c T, out []byte) {
	full := len(vals) &^ 7
	for i := 0; i < full; i += 8 {
		v := vals[i : i+8 : i+8]
		out[i>>3] = bit(!(v[0] >= c)) | bit(!(v[1] >= c))<<1 | bit(!(v[2] >= c))<<2 | bit(!(v[3] >= c))<<3 |
			bit(!(v[4] >= c))<<4 | bit(!(v[5] >= c))<<5 | bit(!(v[6] >= c))<<6 | bit(!(v[7] >= c))<<7
	}
	if full < len(vals) {
		var b byte
		for j, x := range vals[full:] {
			b |= bit(!(x >= c)) << j
		}
		out[full>>3] = b
	}
}

func eqBits[T cmp.Ordered](vals []T, c T, out []byte) {
	full := len(vals) &^ 7
	for i := 0; i < full; i += 8 {
		v := vals[i : i+8 : i+8]
		out[i>>3] = bit(v[0] == c) | bit(v[1] == c)<<1 | bit(v[2] == c)<<2 | bit(v[3] == c)<<3 |
			bit(v[4] == c)<<4 | bit(v[5] == c)<<5 | bit(v[6] == c)<<6 | bit(v[7] == c)<<7
	}
	if full < len(vals) {
		var b byte
		for j, x := range vals[full:] {
			b |= bit(x == c) << j
		}
		out[full>>3] = b
	}
}

// compareThreeWayBits writes bit i of out as op applied to compare(i), a three-way comparison
// of row i with the constant, for i < n. It serves the types without a native order (decimals,
// strings).
func compareThreeWayBits(n int, compare func(i int) int, op constCmp, out []byte) {
	var want [3]byte
	for r := -1; r <= 1; r++ {
		want[r+1] = bit(op.outcome(r))
	}
	for i := 0; i < n; i += 8 {
		var b byte
		for j := 0; j < 8 && i+j < n; j++ {
			b |= want[compare(i+j)+1] << j
		}
		out[i>>3] = b
	}
}
