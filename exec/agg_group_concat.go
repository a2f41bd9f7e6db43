package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// aggGroupConcatSeparator joins the values of a group, as MySQL's default SEPARATOR does.
const aggGroupConcatSeparator = ','

// aggGroupConcatDef is GROUP_CONCAT(x, …): per row whose arguments are all non-NULL, the
// arguments' text concatenated; rows joined by ",", in input order (SQL leaves it unspecified).
// NULL for a group without such rows. The state is the partial string, joined by "," on merge.
// MySQL's group_concat_max_len truncation is not applied.
func aggGroupConcatDef(argTypes []arrow.DataType) *aggregateDef {
	return &aggregateDef{
		result: arrow.BinaryTypes.String,
		states: []arrow.DataType{arrow.BinaryTypes.String},
		newAcc: func() aggAccumulator { return &aggGroupConcat{} },
	}
}

type aggGroupConcat struct {
	texts [][]byte
	seen  []bool
}

func (a *aggGroupConcat) grow(n int) {
	a.texts = aggGrow(a.texts, n, nil)
	a.seen = aggGrow(a.seen, n, false)
}

func (a *aggGroupConcat) update(groups []uint32, args []arrow.Array) error {
rows:
	for i, g := range groups {
		for _, arg := range args {
			if !validAt(arg, i) {
				continue rows
			}
		}
		if a.seen[g] {
			a.texts[g] = append(a.texts[g], aggGroupConcatSeparator)
		}
		a.seen[g] = true
		for _, arg := range args {
			a.texts[g] = aggAppendText(a.texts[g], arg, i)
		}
	}
	return nil
}

func (a *aggGroupConcat) merge(groups []uint32, states []arrow.Array) error {
	if _, ok := states[0].(*array.String); !ok {
		return errs.Internalf("group_concat state must be a string, got %s", states[0].DataType())
	}
	return a.update(groups, states)
}

func (a *aggGroupConcat) finish(mem memory.Allocator) (arrow.Array, error) {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(len(a.texts))
	for g, text := range a.texts {
		if !a.seen[g] {
			b.AppendNull()
			continue
		}
		b.BinaryBuilder.Append(text)
	}
	return b.NewArray(), nil
}

func (a *aggGroupConcat) state(mem memory.Allocator) ([]arrow.Array, error) {
	arr, err := a.finish(mem)
	if err != nil {
		return nil, err
	}
	return []arrow.Array{arr}, nil
}
