package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// Three-valued logic and the IS predicates. Operands of any type are read as MySQL truth values
// (non-zero numbers are true, strings by their leading number); NULL is unknown.

func init() {
	RegisterScalar("and", resolveLogic("and"))
	RegisterScalar("or", resolveLogic("or"))
	RegisterScalar("xor", resolveLogic("xor"))
	RegisterScalar("not", resolveNot)
	for _, name := range []string{"is_null", "is_not_null", "is_true", "is_false", "is_not_true", "is_not_false"} {
		RegisterScalar(name, resolveIs(name))
	}
}

var boolType = arrow.FixedWidthTypes.Boolean

// checkTruthValues rejects operand types that have no truth value.
func checkTruthValues(name string, types []arrow.DataType) error {
	for _, t := range types {
		if !isNullType(t) && !isNumericType(t) && !isStringType(t) {
			return errs.Invalidf("%s does not apply to values of type %s", name, t)
		}
	}
	return nil
}

// truthArgs casts every argument to bool.
func truthArgs(ctx context.Context, tc *TaskContext, args []arrow.Array) ([]*array.Boolean, func(), error) {
	cast, err := castAllTo(ctx, tc, args, boolType)
	if err != nil {
		return nil, nil, err
	}
	out := make([]*array.Boolean, len(cast))
	for i, c := range cast {
		out[i] = c.(*array.Boolean)
	}
	return out, func() { releaseArrays(cast) }, nil
}

// resolveLogic resolves AND, OR and XOR over two or more operands (folded left to right).
func resolveLogic(name string) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(name, types, 2, -1); err != nil {
			return nil, nil, err
		}
		if err := checkTruthValues(name, types); err != nil {
			return nil, nil, err
		}
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			bs, done, err := truthArgs(ctx, tc, args)
			if err != nil {
				return nil, err
			}
			defer done()
			if len(bs) == 2 && name != "xor" && n > 0 {
				if out := bitmapLogic(tc.Alloc, name == "and", bs[0], bs[1]); out != nil {
					return out, nil
				}
			}
			return buildRows(newBoolBuilder(tc.Alloc), n, func(i int) (bool, bool, error) {
				val, valid := bs[0].Value(i), bs[0].IsValid(i)
				for _, b := range bs[1:] {
					val, valid = kleene(name, val, valid, b.Value(i), b.IsValid(i))
				}
				return val, valid, nil
			})
		}
		return k, boolType, nil
	}
}

// kleene combines two truth values (value, known) under three-valued logic.
func kleene(name string, x, xok, y, yok bool) (bool, bool) {
	switch name {
	case "and":
		if (xok && !x) || (yok && !y) {
			return false, true
		}
		return true, xok && yok
	case "or":
		if (xok && x) || (yok && y) {
			return true, true
		}
		return false, xok && yok
	}
	return x != y, xok && yok // xor
}

func resolveNot(types []arrow.DataType) (Kernel, arrow.DataType, error) {
	if err := checkArity("not", types, 1, 1); err != nil {
		return nil, nil, err
	}
	if err := checkTruthValues("not", types); err != nil {
		return nil, nil, err
	}
	return unaryKernel(boolType, func(tc *TaskContext, a arrow.Array) (arrow.Array, error) {
		return notBits(tc.Alloc, a.(*array.Boolean)), nil
	}), boolType, nil
}

// notBits is NOT b: its values inverted a word at a time (FALSE under NULL), its NULLs kept.
func notBits(mem memory.Allocator, b *array.Boolean) arrow.Array {
	n, off := b.Len(), b.Data().Offset()
	values := memory.NewResizableBuffer(mem)
	defer values.Release()
	values.Resize(int(bitutil.BytesForBits(int64(n))))
	bitutil.InvertBitmap(b.Data().Buffers()[1].Bytes(), off, n, values.Bytes(), 0)
	var validity *memory.Buffer
	if b.NullN() > 0 {
		validity = memory.NewResizableBuffer(mem)
		defer validity.Release()
		validity.Resize(int(bitutil.BytesForBits(int64(n))))
		bitutil.CopyBitmap(b.NullBitmapBytes(), off, n, validity.Bytes(), 0)
		bitutil.BitmapAnd(values.Bytes(), validity.Bytes(), 0, 0, values.Bytes(), 0, int64(n))
	}
	out := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{validity, values}, nil, b.NullN(), 0)
	defer out.Release()
	return array.MakeFromData(out)
}

// resolveIs resolves IS [NOT] NULL / TRUE / FALSE; the result is never NULL.
func resolveIs(name string) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := checkArity(name, types, 1, 1); err != nil {
			return nil, nil, err
		}
		if name != "is_null" && name != "is_not_null" {
			if err := checkTruthValues(name, types); err != nil {
				return nil, nil, err
			}
		}
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			a := args[0]
			switch name {
			case "is_null", "is_not_null":
				want := name == "is_null"
				return buildRows(newBoolBuilder(tc.Alloc), n, func(i int) (bool, bool, error) {
					return !validAt(a, i) == want, true, nil
				})
			}
			bs, done, err := truthArgs(ctx, tc, args)
			if err != nil {
				return nil, err
			}
			defer done()
			b := bs[0]
			wantValue := name == "is_true" || name == "is_not_true"
			negated := name == "is_not_true" || name == "is_not_false"
			return buildRows(newBoolBuilder(tc.Alloc), n, func(i int) (bool, bool, error) {
				is := b.IsValid(i) && b.Value(i) == wantValue
				return is != negated, true, nil
			})
		}
		return k, boolType, nil
	}
}
