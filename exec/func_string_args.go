package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// Plumbing of the string functions: arguments are converted to text ('s') or to BIGINT ('i') as
// the function's signature says, then a per-row function sees plain Go values.

// stringSig describes a string function: kinds holds one letter per argument ('s' text, 'i'
// integer); with variadic the last kind repeats. skipNulls lets NULL arguments after the first
// through (CONCAT_WS); otherwise any NULL argument makes the row NULL.
type stringSig struct {
	name      string
	kinds     string
	optional  int // how many trailing arguments may be left out
	variadic  bool
	skipNulls bool
}

// kindOf returns the kind of argument i.
func (s stringSig) kindOf(i int) byte {
	if i >= len(s.kinds) {
		return s.kinds[len(s.kinds)-1]
	}
	return s.kinds[i]
}

func (s stringSig) check(types []arrow.DataType) error {
	max := len(s.kinds)
	if s.variadic {
		max = -1
	}
	if err := checkArity(s.name, types, len(s.kinds)-s.optional, max); err != nil {
		return err
	}
	for i, t := range types {
		ok := isNullType(t) || isStringType(t) || isNumericType(t) || (s.kindOf(i) == 's' && isTemporalType(t))
		if !ok {
			return errs.Invalidf("function %s does not accept values of type %s", s.name, t)
		}
	}
	return nil
}

// stringRow is one row's arguments: str[i] for text arguments, num[i] for integer ones, null[i]
// when argument i is NULL (only seen with skipNulls).
type stringRow struct {
	str  []string
	num  []int64
	null []bool

	produced int64 // bytes of this batch's results so far (see maxBatchStringBytes)
	err      error // set by admit when the batch's results would pass maxBatchStringBytes
}

// stringArgs holds the converted arguments of one kernel call.
type stringArgs struct {
	sig  stringSig
	strs []*array.String
	nums []*array.Int64
	all  []arrow.Array
}

func prepareStringArgs(ctx context.Context, tc *TaskContext, sig stringSig, args []arrow.Array) (*stringArgs, error) {
	sa := &stringArgs{sig: sig, strs: make([]*array.String, len(args)), nums: make([]*array.Int64, len(args)), all: make([]arrow.Array, len(args))}
	for i, a := range args {
		to := arrow.DataType(arrow.BinaryTypes.String)
		if sig.kindOf(i) == 'i' {
			to = arrow.PrimitiveTypes.Int64
		}
		c, err := CastArray(ctx, tc, a, to)
		if err != nil {
			sa.release()
			return nil, err
		}
		sa.all[i] = c
		if s, ok := c.(*array.String); ok {
			sa.strs[i] = s
		} else {
			sa.nums[i] = c.(*array.Int64)
		}
	}
	return sa, nil
}

func (sa *stringArgs) release() { releaseArrays(sa.all) }

// load fills row with row i; it returns false when the row is NULL.
func (sa *stringArgs) load(i int, row *stringRow) bool {
	if row.str == nil {
		row.str = make([]string, len(sa.all))
		row.num = make([]int64, len(sa.all))
		row.null = make([]bool, len(sa.all))
	}
	for j, a := range sa.all {
		row.null[j] = a.IsNull(i)
		if row.null[j] {
			if !sa.sig.skipNulls || j == 0 {
				return false
			}
			continue
		}
		if sa.strs[j] != nil {
			row.str[j] = sa.strs[j].Value(i)
		} else {
			row.num[j] = sa.nums[j].Value(i)
		}
	}
	return true
}

// resolveTextFunc registers a string function returning text; f returns ok=false for NULL.
func resolveTextFunc(sig stringSig, f func(r *stringRow) (string, bool)) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := sig.check(types); err != nil {
			return nil, nil, err
		}
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			sa, err := prepareStringArgs(ctx, tc, sig, args)
			if err != nil {
				return nil, err
			}
			defer sa.release()
			var row stringRow
			return buildRows(newStringBuilder(tc.Alloc), n, func(i int) (string, bool, error) {
				if !sa.load(i, &row) {
					return "", false, nil
				}
				v, ok := f(&row)
				if row.err != nil {
					return "", false, row.err
				}
				// Functions whose results can be large check before allocating (admit); this
				// bounds the others, whose results are about as long as their arguments.
				row.produced += int64(len(v))
				if row.produced > maxBatchTextBytes {
					return "", false, batchTooLarge(maxBatchTextBytes)
				}
				return v, ok, nil
			})
		}
		return k, arrow.BinaryTypes.String, nil
	}
}

// resolveIntStringFunc registers a string function returning BIGINT.
func resolveIntStringFunc(sig stringSig, f func(r *stringRow) int64) ScalarResolver {
	return func(types []arrow.DataType) (Kernel, arrow.DataType, error) {
		if err := sig.check(types); err != nil {
			return nil, nil, err
		}
		k := func(ctx context.Context, tc *TaskContext, args []arrow.Array, n int) (arrow.Array, error) {
			sa, err := prepareStringArgs(ctx, tc, sig, args)
			if err != nil {
				return nil, err
			}
			defer sa.release()
			var row stringRow
			return buildRows(newInt64Builder(tc.Alloc), n, func(i int) (int64, bool, error) {
				if !sa.load(i, &row) {
					return 0, false, nil
				}
				return f(&row), true, nil
			})
		}
		return k, arrow.PrimitiveTypes.Int64, nil
	}
}
