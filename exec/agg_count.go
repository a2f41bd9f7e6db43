package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// aggCountDef is COUNT(*) (star) or COUNT(x, …): the number of rows, or of rows whose arguments
// are all non-NULL. Its state is the partial count (int64, never NULL).
func aggCountDef(star bool) *aggregateDef {
	return &aggregateDef{
		result: arrow.PrimitiveTypes.Int64,
		states: []arrow.DataType{arrow.PrimitiveTypes.Int64},
		newAcc: func() aggAccumulator { return &aggCount{star: star} },
	}
}

type aggCount struct {
	star   bool
	counts []int64
}

func (a *aggCount) grow(n int) { a.counts = aggGrow(a.counts, n, 0) }

func (a *aggCount) update(groups []uint32, args []arrow.Array) error {
	nullable := false
	for _, arg := range args {
		if arg.NullN() > 0 {
			nullable = true
		}
	}
	if a.star || !nullable {
		for _, g := range groups {
			a.counts[g]++
		}
		return nil
	}
rows:
	for i, g := range groups {
		for _, arg := range args {
			if !validAt(arg, i) {
				continue rows
			}
		}
		a.counts[g]++
	}
	return nil
}

func (a *aggCount) merge(groups []uint32, states []arrow.Array) error {
	partial, ok := states[0].(*array.Int64)
	if !ok {
		return errs.Internalf("count state must be int64, got %s", states[0].DataType())
	}
	vals := partial.Int64Values()
	for i, g := range groups {
		a.counts[g] += vals[i]
	}
	return nil
}

func (a *aggCount) finish(mem memory.Allocator) (arrow.Array, error) {
	return aggBuildArray(mem, arrow.PrimitiveTypes.Int64, a.counts, nil)
}

func (a *aggCount) state(mem memory.Allocator) ([]arrow.Array, error) {
	arr, err := a.finish(mem)
	if err != nil {
		return nil, err
	}
	return []arrow.Array{arr}, nil
}
