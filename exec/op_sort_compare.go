package exec

import (
	"bytes"
	"cmp"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// sortRowComparator returns a function ordering rows a and b of the key columns keys (all of
// one length) in MySQL ORDER BY order: per key, NULL before any value, values by type (numbers
// numerically, strings bytewise, false < true); a DESC key reverses both, which puts NULLs last.
// It returns < 0, 0 or > 0. Each key reads its array through typed slices: no boxing per row.
func sortRowComparator(keys []arrow.Array, desc []bool) (func(a, b int32) int, error) {
	return sortRowsComparatorWith(keys, keys, desc, sortRankedComparator)
}

// sortRowsComparator is sortRowComparator across two sets of key columns of the same types:
// it orders row a of xs against row b of ys (the k-way merge of sorted runs compares the
// current rows of two runs' batches).
func sortRowsComparator(xs, ys []arrow.Array, desc []bool) (func(a, b int32) int, error) {
	return sortRowsComparatorWith(xs, ys, desc, nil)
}

// sortRowsComparatorWith is sortRowsComparator where ranked, when not nil, may give the
// ascending comparator of a key column (of xs, which is then ys) in place of
// sortPairComparator's.
func sortRowsComparatorWith(xs, ys []arrow.Array, desc []bool, ranked func(arrow.Array) func(a, b int32) int) (func(a, b int32) int, error) {
	cmps := make([]func(a, b int32) int, len(xs))
	for i := range xs {
		var c func(a, b int32) int
		if ranked != nil {
			c = ranked(xs[i])
		}
		if c == nil {
			var err error
			if c, err = sortPairComparator(xs[i], ys[i]); err != nil {
				return nil, err
			}
		}
		if desc[i] {
			asc := c
			c = func(a, b int32) int { return -asc(a, b) }
		}
		cmps[i] = c
	}
	if len(cmps) == 1 {
		return cmps[0], nil
	}
	return func(a, b int32) int {
		for _, c := range cmps {
			if r := c(a, b); r != 0 {
				return r
			}
		}
		return 0
	}, nil
}

// sortPairComparator orders row a of x against row b of y ascending, NULLs first; x and y have
// one type.
func sortPairComparator(x, y arrow.Array) (func(a, b int32) int, error) {
	if !arrow.TypeEqual(x.DataType(), y.DataType()) {
		return nil, errs.Internalf("ordering %s against %s", x.DataType(), y.DataType())
	}
	var values func(a, b int32) int
	switch k := x.(type) {
	case *array.Null:
		return func(a, b int32) int { return 0 }, nil
	case *array.Int64:
		values = sortOrdered(k.Int64Values(), y.(*array.Int64).Int64Values())
	case *array.Float64:
		values = sortOrdered(k.Float64Values(), y.(*array.Float64).Float64Values())
	case *array.Date32:
		values = sortOrdered(k.Date32Values(), y.(*array.Date32).Date32Values())
	case *array.Timestamp:
		values = sortOrdered(k.TimestampValues(), y.(*array.Timestamp).TimestampValues())
	case *array.Time64:
		values = sortOrdered(k.Time64Values(), y.(*array.Time64).Time64Values())
	case *array.Decimal128:
		xv, yv := k.Values(), y.(*array.Decimal128).Values()
		values = func(a, b int32) int { return xv[a].Cmp(yv[b]) }
	case *array.String:
		xo, xd := sortStringData(k)
		yo, yd := sortStringData(y.(*array.String))
		values = func(a, b int32) int {
			return bytes.Compare(xd[xo[a]:xo[a+1]], yd[yo[b]:yo[b+1]])
		}
	case *array.Boolean:
		yb := y.(*array.Boolean)
		values = func(a, b int32) int {
			p, q := k.Value(int(a)), yb.Value(int(b))
			switch {
			case p == q:
				return 0
			case !p:
				return -1
			default:
				return 1
			}
		}
	default:
		return nil, errs.Unsupportedf("ordering by a value of type %s is not supported", x.DataType())
	}
	if x.NullN() == 0 && y.NullN() == 0 {
		return values, nil
	}
	return func(a, b int32) int {
		an, bn := x.IsNull(int(a)), y.IsNull(int(b))
		switch {
		case an && bn:
			return 0
		case an:
			return -1
		case bn:
			return 1
		}
		return values(a, b)
	}, nil
}

// sortStringData returns the offsets and value bytes of a string array.
func sortStringData(k *array.String) ([]int32, []byte) {
	var data []byte
	if bufs := k.Data().Buffers(); len(bufs) > 2 && bufs[2] != nil {
		data = bufs[2].Bytes()
	}
	return k.ValueOffsets(), data
}

// sortOrdered compares element a of xs with element b of ys.
func sortOrdered[T cmp.Ordered](xs, ys []T) func(a, b int32) int {
	return func(a, b int32) int { return cmp.Compare(xs[a], ys[b]) }
}
