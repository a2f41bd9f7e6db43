package exec

import (
	"context"
	"sync"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// likeConstExpr is x LIKE 'pattern' [ESCAPE 'e'] with a literal pattern and escape: the shape of
// nearly every LIKE (TPC-H's o_comment NOT LIKE '%special%requests%'). The general kernel
// broadcasts the pattern to every row, checks whether it changed, and appends each result to a
// builder; this compiles the pattern once and matches each row's bytes, straight from the string
// column's buffers, into a bitmap. It yields exactly what the general kernel yields (NULL where x
// is NULL), and falls back to it where the pattern or escape is NULL or the escape is not one
// character.
type likeConstExpr struct {
	general *callExpr
	operand Expr

	once     sync.Once
	segments *likeSegments // the pattern as segments; nil when it has no such form
	tokens   []likeToken
	ok       bool // the pattern compiled; otherwise evaluate general
}

// newLikeConst returns the specialized form of a "like" call whose pattern (and escape) are
// literals, and nil otherwise.
func newLikeConst(call *callExpr) Expr {
	if call.name != "like" || len(call.args) < 2 {
		return nil
	}
	if _, lit := call.args[0].(*literalExpr); lit {
		return nil
	}
	for _, a := range call.args[1:] {
		if _, lit := a.(*literalExpr); !lit {
			return nil
		}
	}
	return &likeConstExpr{general: call, operand: call.args[0]}
}

func (e *likeConstExpr) DataType() arrow.DataType { return e.general.DataType() }
func (e *likeConstExpr) String() string           { return e.general.String() }

// build compiles the pattern, its literal cast to a string as the general kernel casts it.
func (e *likeConstExpr) build(ctx context.Context, tc *TaskContext) {
	one := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer one.Release()
	var text [2]string
	for i, a := range e.general.args[1:] {
		raw, err := a.Eval(ctx, tc, one)
		if err != nil {
			return
		}
		v, err := CastArray(ctx, tc, raw, arrow.BinaryTypes.String)
		raw.Release()
		if err != nil {
			return
		}
		s, ok := v.(*array.String)
		if !ok || s.IsNull(0) {
			v.Release()
			return
		}
		text[i] = s.Value(0)
		v.Release()
	}
	escape := '\\'
	if len(e.general.args) == 3 {
		switch utf8.RuneCountInString(text[1]) {
		case 0:
			escape = -1
		case 1:
			escape, _ = utf8.DecodeRuneInString(text[1])
		default:
			return // the general kernel reports it
		}
	}
	e.tokens = compileLike(text[0], escape)
	if seg, ok := likeSegmentsOf(e.tokens); ok {
		e.segments = seg
	}
	e.ok = true
}

func (e *likeConstExpr) Eval(ctx context.Context, tc *TaskContext, batch arrow.RecordBatch) (arrow.Array, error) {
	e.once.Do(func() { e.build(ctx, tc) })
	if !e.ok {
		return e.general.Eval(ctx, tc, batch)
	}
	cv, ok, err := castOperand(ctx, tc, e.operand, batch, arrow.BinaryTypes.String)
	if err != nil {
		return nil, err
	}
	if !ok {
		return e.general.Eval(ctx, tc, batch)
	}
	defer cv.Release()
	x, ok := cv.(*array.String)
	if !ok {
		return e.general.Eval(ctx, tc, batch)
	}
	n := x.Len()
	values := memory.NewResizableBuffer(tc.Alloc)
	defer values.Release()
	values.Resize(int(bitutil.BytesForBits(int64(n))))
	bits := values.Bytes()
	clear(bits)
	for i := range n {
		var hit bool
		if e.segments != nil {
			hit = e.segments.match(x.Value(i))
		} else {
			hit = matchLike(x.Value(i), e.tokens)
		}
		if hit {
			bits[i>>3] |= 1 << (i & 7)
		}
	}
	var validity *memory.Buffer
	nulls := x.NullN()
	if nulls > 0 {
		validity = memory.NewResizableBuffer(tc.Alloc)
		defer validity.Release()
		validity.Resize(int(bitutil.BytesForBits(int64(n))))
		bitutil.CopyBitmap(x.NullBitmapBytes(), x.Data().Offset(), n, validity.Bytes(), 0)
		bitutil.BitmapAnd(bits, validity.Bytes(), 0, 0, bits, 0, int64(n)) // FALSE under NULL
	}
	out := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{validity, values}, nil, nulls, 0)
	defer out.Release()
	return array.MakeFromData(out), nil
}
