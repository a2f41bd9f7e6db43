package exec

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// aggBitDef is BIT_AND, BIT_OR or BIT_XOR over integers or booleans. The result and the state are
// int64 and never NULL: a group without non-NULL input yields the operation's neutral value (-1,
// all bits set, for BIT_AND; 0 otherwise), as MySQL does.
func aggBitDef(fn string, t arrow.DataType) (*aggregateDef, error) {
	switch t.ID() {
	case arrow.INT64, arrow.BOOL, arrow.NULL:
	default:
		return nil, errs.Unsupportedf("%s over %s is not supported", strings.ToUpper(fn), t)
	}
	return &aggregateDef{
		result: arrow.PrimitiveTypes.Int64,
		states: []arrow.DataType{arrow.PrimitiveTypes.Int64},
		newAcc: func() aggAccumulator { return &aggBit{fn: fn} },
	}, nil
}

type aggBit struct {
	fn   string // bit_and, bit_or or bit_xor
	vals []int64
}

func (a *aggBit) grow(n int) {
	neutral := int64(0)
	if a.fn == "bit_and" {
		neutral = -1
	}
	a.vals = aggGrow(a.vals, n, neutral)
}

func (a *aggBit) update(groups []uint32, args []arrow.Array) error {
	arg := args[0]
	var vals []int64
	switch in := arg.(type) {
	case *array.Null:
		return nil
	case *array.Int64:
		vals = in.Int64Values()
	case *array.Boolean:
		vals = make([]int64, in.Len())
		for i := range vals {
			if in.Value(i) {
				vals[i] = 1
			}
		}
	default:
		return errs.Internalf("%s cannot read %s", a.fn, arg.DataType())
	}
	nulls := arg.NullN() > 0
	switch a.fn {
	case "bit_and":
		for i, g := range groups {
			if aggValid(arg, nulls, i) {
				a.vals[g] &= vals[i]
			}
		}
	case "bit_or":
		for i, g := range groups {
			if aggValid(arg, nulls, i) {
				a.vals[g] |= vals[i]
			}
		}
	default:
		for i, g := range groups {
			if aggValid(arg, nulls, i) {
				a.vals[g] ^= vals[i]
			}
		}
	}
	return nil
}

func (a *aggBit) merge(groups []uint32, states []arrow.Array) error { return a.update(groups, states) }

func (a *aggBit) finish(mem memory.Allocator) (arrow.Array, error) {
	return aggBuildArray(mem, arrow.PrimitiveTypes.Int64, a.vals, nil)
}

func (a *aggBit) state(mem memory.Allocator) ([]arrow.Array, error) {
	arr, err := a.finish(mem)
	if err != nil {
		return nil, err
	}
	return []arrow.Array{arr}, nil
}
