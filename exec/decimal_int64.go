package exec

import (
	"math"
	"math/bits"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Whole-array int64 paths of decimal arithmetic and casts.
//
// Most decimals in practice (prices, rates, quantities) have unscaled values far inside int64.
// When every value of an array's operands fits in int64 and every result does too, a kernel
// computes the batch in one loop of int64 operations, writing the result buffer directly;
// otherwise it reports false and the caller runs its row-by-row decimal128 path over the whole
// batch. Both compute the same exact values and round the same way (half away from zero), so
// the fast path changes only speed; values under NULL are computed too but never read, and
// one that does not fit merely sends the batch down the general path.

// int64DecimalPaths enables the paths; tests turn them off to compare with the general ones.
var int64DecimalPaths = true

// pow10Int64 returns 10^k for 0 <= k <= 18.
func pow10Int64(k int32) (int64, bool) {
	if k < 0 || k > 18 {
		return 0, false
	}
	return int64(decimal128.GetScaleMultiplier(int(k)).LowBits()), true
}

// int64Decimals returns the values of a decimal128 array when every unscaled value (NULL
// slots included) fits in int64: its low word is then the value.
func int64Decimals(a arrow.Array) ([]decimal128.Num, bool) {
	d, ok := a.(*array.Decimal128)
	if !ok {
		return nil, false
	}
	v := d.Values()
	for _, x := range v {
		if x.HighBits() != int64(x.LowBits())>>63 {
			return nil, false
		}
	}
	return v, true
}

// decimal128Values returns the values of a decimal128 array, whatever their size.
func decimal128Values(a arrow.Array) ([]decimal128.Num, bool) {
	d, ok := a.(*array.Decimal128)
	if !ok {
		return nil, false
	}
	return d.Values(), true
}

// The fast loops are optimistic: they compute every result as if its operands and result fitted
// in int64, folding on the way a bound of the operands' magnitudes (their bitwise OR, at least
// the largest and less than twice it) and whether some operand needs more than 64 bits. When
// the bounds then prove that every result fitted, the results stand; otherwise the batch is
// computed again with a check per row (or sent down the general path). One pass over the
// operands instead of a pass to bound them and another to compute.

// foldInt64 returns the low word of x as an int64, ORing its magnitude into bound and, into
// wide, bits that are set when x needs more than 64 bits.
func foldInt64(x decimal128.Num, bound, wide uint64) (int64, uint64, uint64) {
	lo := int64(x.LowBits())
	sign := lo >> 63
	return lo, bound | uint64((lo^sign)-sign), wide | uint64(x.HighBits()^sign)
}

// productFits reports whether every product of magnitudes at most a and b fits in int64.
func productFits(a, b uint64) bool {
	hi, lo := bits.Mul64(a, b)
	return hi == 0 && lo <= math.MaxInt64
}

// scaledSumFits reports whether x*mx ± y*my fits in int64 for every |x| <= bx, |y| <= by.
func scaledSumFits(bx, mx, by, my uint64) bool {
	hx, lx := bits.Mul64(bx, mx)
	hy, ly := bits.Mul64(by, my)
	sum, carry := bits.Add64(lx, ly, 0)
	return hx == 0 && hy == 0 && carry == 0 && sum <= math.MaxInt64
}

// magnitude is |v| as an unsigned number (exact for math.MinInt64).
func magnitude(v int64) uint64 {
	sign := v >> 63
	return uint64((v ^ sign) - sign)
}

// divPow10Int64 returns v / d (d a power of ten) rounded half away from zero.
func divPow10Int64(v, d int64) int64 {
	q, r := v/d, v%d
	if r < 0 {
		r = -r
	}
	if r >= d-r { // r*2 >= d without overflow
		if v < 0 {
			q--
		} else {
			q++
		}
	}
	return q
}

// decimalResult is a decimal array of type t under construction: values written in place, the
// validity the AND of the operands'.
type decimalResult struct {
	values *memory.Buffer
	out    []decimal128.Num
}

func newDecimalResult(mem memory.Allocator, n int) decimalResult {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(n * 16)
	var out []decimal128.Num
	if n > 0 {
		out = unsafe.Slice((*decimal128.Num)(unsafe.Pointer(unsafe.SliceData(buf.Bytes()))), n)
	}
	return decimalResult{values: buf, out: out}
}

// finish returns the array of type t with NULL wherever one of operands is NULL.
func (r decimalResult) finish(mem memory.Allocator, t arrow.DataType, operands ...arrow.Array) arrow.Array {
	defer r.values.Release()
	n := len(r.out)
	validity, nulls := andValidity(mem, n, operands)
	if validity != nil {
		defer validity.Release()
	}
	data := array.NewData(t, n, []*memory.Buffer{validity, r.values}, nil, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

func (r decimalResult) release() { r.values.Release() }

// andValidity returns the bitmap of the rows where every array of as (each of n rows) is valid,
// and the count of the others; nil and 0 when all are valid.
func andValidity(mem memory.Allocator, n int, as []arrow.Array) (*memory.Buffer, int) {
	var buf *memory.Buffer
	for _, a := range as {
		if a.NullN() == 0 {
			continue
		}
		if buf == nil {
			buf = memory.NewResizableBuffer(mem)
			buf.Resize(int(bitutil.BytesForBits(int64(n))))
			bits := buf.Bytes()
			for i := range bits {
				bits[i] = 0xFF
			}
		}
		bits := buf.Bytes()
		src := a.NullBitmapBytes()
		bitutil.BitmapAnd(bits, src, 0, int64(a.Data().Offset()), bits, 0, int64(n))
	}
	if buf == nil {
		return nil, 0
	}
	return buf, n - bitutil.CountSetBits(buf.Bytes(), 0, n)
}

// decimalArithInt64 computes x op y (op "+", "-" or "*") for decimal arrays a and b into the
// decimal type result, or reports false (see above).
func decimalArithInt64(tc *TaskContext, op string, result *arrow.Decimal128Type, a, b arrow.Array) (arrow.Array, bool) {
	if !int64DecimalPaths || a.Len() != b.Len() {
		return nil, false
	}
	x, ok1 := decimal128Values(a)
	y, ok2 := decimal128Values(b)
	if !ok1 || !ok2 {
		return nil, false
	}
	s1, s2, s := decimalScale(a.DataType()), decimalScale(b.DataType()), result.Scale
	r := newDecimalResult(tc.Alloc, len(x))
	ok := false
	switch op {
	case "+", "-":
		ok = addInt64Scaled(r.out, x, y, s-s1, s-s2, op == "-")
	case "*":
		ok = mulInt64Scaled(r.out, x, y, s1+s2-s)
	}
	if !ok {
		r.release()
		return nil, false
	}
	return r.finish(tc.Alloc, result, a, b), true
}

// addInt64Scaled sets out[i] to x[i]*10^kx ± y[i]*10^ky, false when a value leaves int64
// (optimistically, see above).
func addInt64Scaled(out, x, y []decimal128.Num, kx, ky int32, sub bool) bool {
	mx, ok1 := pow10Int64(kx)
	my, ok2 := pow10Int64(ky)
	if !ok1 || !ok2 {
		return false
	}
	ms := my
	if sub {
		ms = -my
	}
	var bx, by, wide uint64
	var xi, yi int64
	for i := range out {
		xi, bx, wide = foldInt64(x[i], bx, wide)
		yi, by, wide = foldInt64(y[i], by, wide)
		out[i] = decimal128.FromI64(xi*mx + yi*ms)
	}
	if wide != 0 {
		return false
	}
	if scaledSumFits(bx, uint64(mx), by, uint64(my)) {
		return true
	}
	limX, limY := int64(math.MaxInt64)/mx, int64(math.MaxInt64)/my
	for i := range out {
		xi, yi := int64(x[i].LowBits()), int64(y[i].LowBits())
		if xi > limX || xi < -limX || yi > limY || yi < -limY {
			return false
		}
		xs, ys := xi*mx, yi*my
		if sub {
			ys = -ys
		}
		v, ok := addInt64(xs, ys)
		if !ok {
			return false
		}
		out[i] = decimal128.FromI64(v)
	}
	return true
}

// addInt64 is a+b, false when the sum leaves int64.
func addInt64(a, b int64) (int64, bool) {
	v := a + b
	return v, (a >= 0) != (b >= 0) || (v >= 0) == (a >= 0)
}

// mulInt64Scaled sets out[i] to x[i]*y[i] / 10^drop (rounded), false when a product leaves
// int64 (optimistically, see above).
func mulInt64Scaled(out, x, y []decimal128.Num, drop int32) bool {
	d, ok := pow10Int64(drop)
	if !ok {
		return false
	}
	var bx, by, wide uint64
	var xi, yi int64
	for i := range out {
		xi, bx, wide = foldInt64(x[i], bx, wide)
		yi, by, wide = foldInt64(y[i], by, wide)
		p := xi * yi
		if d > 1 {
			p = divPow10Int64(p, d)
		}
		out[i] = decimal128.FromI64(p)
	}
	if wide != 0 {
		return false
	}
	if productFits(bx, by) {
		return true
	}
	for i := range out {
		p, ok := mulInt64(int64(x[i].LowBits()), int64(y[i].LowBits()))
		if !ok {
			return false
		}
		if d > 1 {
			p = divPow10Int64(p, d)
		}
		out[i] = decimal128.FromI64(p)
	}
	return true
}

// castToDecimalInt64 casts an int64 or decimal array to DECIMAL(p, s) when every value and
// result fits in int64 and the precision (no clamping needed), else reports false.
func castToDecimalInt64(tc *TaskContext, a arrow.Array, to *arrow.Decimal128Type) (arrow.Array, bool) {
	if !int64DecimalPaths {
		return nil, false
	}
	var rs rescaler
	r := newDecimalResult(tc.Alloc, a.Len())
	ok := false
	switch src := a.(type) {
	case *array.Int64:
		if rs, ok = newRescaler(to.Scale, to.Precision); ok {
			for i, x := range src.Int64Values() {
				if r.out[i], ok = rs.apply(x); !ok {
					break
				}
			}
		}
	case *array.Decimal128:
		var v []decimal128.Num
		if v, ok = int64Decimals(a); ok {
			if rs, ok = newRescaler(to.Scale-decimalScale(a.DataType()), to.Precision); ok {
				for i, x := range v {
					if r.out[i], ok = rs.apply(int64(x.LowBits())); !ok {
						break
					}
				}
			}
		}
	}
	if !ok {
		r.release()
		return nil, false
	}
	return r.finish(tc.Alloc, to, a), true
}

// rescaler multiplies by 10^k (k >= 0) or divides by 10^-k rounding, within int64 and a
// precision.
type rescaler struct {
	k      int32
	m, lim int64
	bound  int64 // 10^precision, 0 when every int64 fits the precision
}

func newRescaler(k, precision int32) (rescaler, bool) {
	m, ok := pow10Int64(max(k, -k))
	if !ok {
		return rescaler{}, false
	}
	rs := rescaler{k: k, m: m, lim: math.MaxInt64 / m}
	if precision < 19 {
		rs.bound, _ = pow10Int64(precision)
	}
	return rs, true
}

// apply rescales x, false when the result leaves int64 or the precision.
func (rs rescaler) apply(x int64) (decimal128.Num, bool) {
	var r int64
	if rs.k >= 0 {
		if x > rs.lim || x < -rs.lim {
			return decimal128.Num{}, false
		}
		r = x * rs.m
	} else {
		r = divPow10Int64(x, rs.m)
	}
	if rs.bound != 0 && (r >= rs.bound || r <= -rs.bound) {
		return decimal128.Num{}, false
	}
	return decimal128.FromI64(r), true
}
