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
	cmps := make([]func(a, b int32) int, len(keys))
	for i, k := range keys {
		c, err := sortColumnComparator(k)
		if err != nil {
			return nil, err
		}
		if desc[i] {
			asc := c
			c = func(a, b int32) int { return asc(b, a) }
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

// sortColumnComparator orders the rows of one column ascending, NULLs first.
func sortColumnComparator(arr arrow.Array) (func(a, b int32) int, error) {
	var values func(a, b int32) int
	switch k := arr.(type) {
	case *array.Null:
		return func(a, b int32) int { return 0 }, nil
	case *array.Int64:
		values = sortOrdered(k.Int64Values())
	case *array.Float64:
		values = sortOrdered(k.Float64Values())
	case *array.Date32:
		values = sortOrdered(k.Date32Values())
	case *array.Timestamp:
		values = sortOrdered(k.TimestampValues())
	case *array.Time64:
		values = sortOrdered(k.Time64Values())
	case *array.Decimal128:
		vals := k.Values()
		values = func(a, b int32) int { return vals[a].Cmp(vals[b]) }
	case *array.String:
		offs := k.ValueOffsets()
		var data []byte
		if bufs := k.Data().Buffers(); len(bufs) > 2 && bufs[2] != nil {
			data = bufs[2].Bytes()
		}
		values = func(a, b int32) int {
			return bytes.Compare(data[offs[a]:offs[a+1]], data[offs[b]:offs[b+1]])
		}
	case *array.Boolean:
		values = func(a, b int32) int {
			x, y := k.Value(int(a)), k.Value(int(b))
			switch {
			case x == y:
				return 0
			case !x:
				return -1
			default:
				return 1
			}
		}
	default:
		return nil, errs.Unsupportedf("ordering by a value of type %s is not supported", arr.DataType())
	}
	if arr.NullN() == 0 {
		return values, nil
	}
	return func(a, b int32) int {
		an, bn := arr.IsNull(int(a)), arr.IsNull(int(b))
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

// sortOrdered compares elements of an ordered slice by index.
func sortOrdered[T cmp.Ordered](vals []T) func(a, b int32) int {
	return func(a, b int32) int { return cmp.Compare(vals[a], vals[b]) }
}
