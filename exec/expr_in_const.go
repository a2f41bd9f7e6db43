package exec

import (
	"context"
	"encoding/binary"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// inConstExpr is x IN (c1, …, cn) with literal ci, compared as int64, date32, timestamp or
// string (byte-wise, as the general kernel compares strings): the shape of long IN lists and of
// TPC-H's l_shipmode IN ('MAIL', 'SHIP'). The general kernel broadcasts every constant to a whole array per
// batch and compares each row with each of them (rows × n work and memory); this converts the
// constants to the comparison type once, into a hash set, and probes it once per row. It yields
// exactly what the general kernel yields (equality in these types is equality of the values),
// and falls back to it when a constant does not convert.
type inConstExpr struct {
	general *callExpr
	operand Expr
	cmpType arrow.DataType

	once sync.Once
	set  map[int64]struct{}  // the non-NULL constants, as int64 (date32 and timestamp widened)
	strs map[string]struct{} // the non-NULL constants when they compare as strings
	// byLen holds the string constants by length when they are few (smallStringSet): a row
	// is then compared with those of its length instead of hashed. words holds them as
	// little-endian words when moreover none is longer than 8 bytes.
	byLen   [][]string
	words   []shortString
	sawNull bool // some constant is NULL
	ok      bool // the set was built; otherwise evaluate general
}

// newInConst returns the specialized form of an "in" call whose list is all literals and whose
// comparison type is int64, date32, timestamp or string, and nil otherwise.
func newInConst(call *callExpr) Expr {
	if call.name != "in" || len(call.args) < 2 {
		return nil
	}
	if _, lit := call.args[0].(*literalExpr); lit {
		return nil
	}
	types := make([]arrow.DataType, len(call.args))
	for i, a := range call.args {
		if _, lit := a.(*literalExpr); !lit && i > 0 {
			return nil
		}
		types[i] = a.DataType()
	}
	t, err := comparisonType("IN", types)
	if err != nil {
		return nil
	}
	switch t.ID() {
	case arrow.INT64, arrow.DATE32, arrow.TIMESTAMP, arrow.STRING:
	default:
		return nil
	}
	return &inConstExpr{general: call, operand: call.args[0], cmpType: t}
}

func (e *inConstExpr) DataType() arrow.DataType { return e.general.DataType() }
func (e *inConstExpr) String() string           { return e.general.String() }

// build converts the constants to the comparison type, as the general kernel's cast does.
func (e *inConstExpr) build(ctx context.Context, tc *TaskContext) {
	one := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer one.Release()
	set := make(map[int64]struct{}, len(e.general.args)-1)
	if e.cmpType.ID() == arrow.STRING {
		e.strs = make(map[string]struct{}, len(e.general.args)-1)
	}
	for _, c := range e.general.args[1:] {
		if k, ok := int64OfScalar(c.(*literalExpr).v, e.cmpType); ok {
			set[k] = struct{}{} // already of the comparison type: no cast to make
			continue
		}
		raw, err := c.Eval(ctx, tc, one)
		if err != nil {
			return
		}
		v, err := CastArray(ctx, tc, raw, e.cmpType)
		raw.Release()
		if err != nil {
			return
		}
		if v.IsNull(0) {
			e.sawNull = true
		} else if sv, ok := v.(*array.String); ok && e.strs != nil {
			e.strs[strings.Clone(sv.Value(0))] = struct{}{}
		} else if k, ok := int64At(v, 0); ok {
			set[k] = struct{}{}
		} else {
			v.Release()
			return
		}
		v.Release()
	}
	e.set, e.ok = set, true
	if e.strs != nil && len(e.strs) <= smallStringSet {
		for c := range e.strs {
			for len(e.byLen) <= len(c) {
				e.byLen = append(e.byLen, nil)
			}
			e.byLen[len(c)] = append(e.byLen[len(c)], c)
		}
		if len(e.byLen) <= 8 {
			for c := range e.strs {
				b := []byte(c)
				e.words = append(e.words, shortString{word: wordOf(b, 0, int32(len(b))), n: int32(len(b))})
			}
		}
	}
}

// shortString is a string of at most 8 bytes as a little-endian word (zero-padded) and its length.
type shortString struct {
	word uint64
	n    int32
}

// wordOf returns b (at most 8 bytes, at data[lo:hi]) as a little-endian zero-padded word.
func wordOf(data []byte, lo, hi int32) uint64 {
	if int(lo)+8 <= len(data) {
		return binary.LittleEndian.Uint64(data[lo:]) & (1<<(8*uint(hi-lo)) - 1)
	}
	var w uint64
	for k := lo; k < hi; k++ {
		w |= uint64(data[k]) << (8 * uint(k-lo))
	}
	return w
}

// stringRows returns the rows' offsets and the whole values buffer they index (ValueBytes would
// start at the first row's value, not at the buffer's start).
func stringRows(x *array.String) ([]int32, []byte) {
	var data []byte
	if b := x.Data().Buffers()[2]; b != nil {
		data = b.Bytes()
	}
	return x.ValueOffsets(), data
}

// oneIf is 1 when b holds, else 0 (a set instruction, not a branch).
func oneIf(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// smallStringSet is the most string constants an IN compares rows with one by one (of the row's
// length only) rather than hashing each row: TPC-H's lists are of two to eight.
const smallStringSet = 8

// int64OfScalar returns the value of a valid scalar of type t (int64, date32 or timestamp) as an
// int64; ok is false for any other scalar.
func int64OfScalar(v scalar.Scalar, t arrow.DataType) (int64, bool) {
	if !v.IsValid() || !arrow.TypeEqual(v.DataType(), t) {
		return 0, false
	}
	switch v := v.(type) {
	case *scalar.Int64:
		return v.Value, true
	case *scalar.Date32:
		return int64(v.Value), true
	case *scalar.Timestamp:
		return int64(v.Value), true
	}
	return 0, false
}

// int64At returns row i of an int64, date32 or timestamp array as an int64.
func int64At(a arrow.Array, i int) (int64, bool) {
	switch a := a.(type) {
	case *array.Int64:
		return a.Value(i), true
	case *array.Date32:
		return int64(a.Value(i)), true
	case *array.Timestamp:
		return int64(a.Value(i)), true
	}
	return 0, false
}

// castOperand evaluates operand over batch and casts it to t; ok is false when the cast fails,
// for a specialized expression to evaluate its general form instead, which reports the error as
// it does.
func castOperand(ctx context.Context, tc *TaskContext, operand Expr, batch arrow.RecordBatch, t arrow.DataType) (arrow.Array, bool, error) {
	v, err := operand.Eval(ctx, tc, batch)
	if err != nil {
		return nil, false, err
	}
	cv, err := CastArray(ctx, tc, v, t)
	v.Release()
	if err != nil {
		return nil, false, nil
	}
	return cv, true, nil
}

func (e *inConstExpr) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	e.once.Do(func() { e.build(ctx, tc) })
	if !e.ok {
		return e.general.Eval(ctx, tc, batch)
	}
	cv, ok, err := castOperand(ctx, tc, e.operand, batch, e.cmpType)
	if err != nil {
		return nil, err
	}
	if !ok {
		return e.general.Eval(ctx, tc, batch) // the general kernel reports the error as it does
	}
	defer cv.Release()
	if e.strs != nil {
		sv, ok := cv.(*array.String)
		if !ok {
			return e.general.Eval(ctx, tc, batch)
		}
		return e.inStrings(tc, sv), nil
	}
	return buildRows(newBoolBuilder(tc.Alloc), int(batch.NumRows()), func(i int) (bool, bool, error) {
		if cv.IsNull(i) {
			return false, false, nil
		}
		k, _ := int64At(cv, i)
		if _, found := e.set[k]; found {
			return true, true, nil
		}
		return false, !e.sawNull, nil
	})
}

// inStrings is the result for the rows of x: TRUE where the value is a constant, NULL where x is
// NULL or, when some constant is NULL, where it is none, FALSE elsewhere.
func (e *inConstExpr) inStrings(tc *TaskContext, x *array.String) arrow.Array {
	n := x.Len()
	values := memory.NewResizableBuffer(tc.Alloc)
	defer values.Release()
	values.Resize(int(bitutil.BytesForBits(int64(n))))
	bits := values.Bytes()
	clear(bits)
	if e.words != nil {
		// Each row of at most 8 bytes as a word, compared with every constant's (no branch
		// on which matches: the matches of one list come in no order).
		offsets, data := stringRows(x)
		for i := range n {
			lo, hi := offsets[i], offsets[i+1]
			if hi-lo > 8 {
				continue
			}
			w, l := wordOf(data, lo, hi), hi-lo
			hit := byte(0)
			for _, c := range e.words {
				hit |= oneIf(c.word == w) & oneIf(c.n == l)
			}
			bits[i>>3] |= hit << (i & 7)
		}
	} else if e.byLen != nil {
		offsets, data := stringRows(x)
		for i := range n {
			lo, hi := offsets[i], offsets[i+1]
			if int(hi-lo) >= len(e.byLen) {
				continue
			}
			for _, c := range e.byLen[hi-lo] {
				if string(data[lo:hi]) == c {
					bitutil.SetBit(bits, i)
					break
				}
			}
		}
	} else {
		for i := range n {
			if _, found := e.strs[x.Value(i)]; found {
				bitutil.SetBit(bits, i)
			}
		}
	}
	var validity *memory.Buffer
	nulls := 0
	if x.NullN() > 0 || e.sawNull {
		validity = memory.NewResizableBuffer(tc.Alloc)
		defer validity.Release()
		validity.Resize(int(bitutil.BytesForBits(int64(n))))
		valid := validity.Bytes()
		switch {
		case e.sawNull:
			copy(valid, bits) // only a match is not NULL
		default:
			bitutil.SetBitsTo(valid, 0, int64(n), true)
		}
		if x.NullN() > 0 {
			bitutil.BitmapAnd(valid, x.NullBitmapBytes(), 0, int64(x.Data().Offset()), valid, 0, int64(n))
		}
		nulls = n - bitutil.CountSetBits(valid, 0, n)
		bitutil.BitmapAnd(bits, valid, 0, 0, bits, 0, int64(n)) // FALSE under NULL
	}
	data := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{validity, values}, nil, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}
