package exec

import (
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// aggGroupConcatSeparator joins the values of a group, as MySQL's default SEPARATOR does.
const aggGroupConcatSeparator = ','

// aggGroupConcatMaxLen is MySQL's default group_concat_max_len, in bytes.
const aggGroupConcatMaxLen = 1024

// aggGroupConcatDef is GROUP_CONCAT(x, …): per row whose arguments are all non-NULL, the
// arguments' text concatenated; rows joined by ",", in input order (SQL leaves it unspecified).
// NULL for a group without such rows. The state is the partial string, joined by "," on merge.
// The result is cut to aggGroupConcatMaxLen bytes (MySQL's default group_concat_max_len), at a
// character boundary; once cut, a group takes no more text.
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
	full  []bool // cut at aggGroupConcatMaxLen
	bytes int64  // sum of the texts' lengths
}

// heldBytes is what the state holds: the texts and a slice header and two flags per group.
func (a *aggGroupConcat) heldBytes() int64 { return a.bytes + 26*int64(len(a.texts)) }

func (a *aggGroupConcat) grow(n int) {
	a.texts = aggGrow(a.texts, n, nil)
	a.seen = aggGrow(a.seen, n, false)
	a.full = aggGrow(a.full, n, false)
}

func (a *aggGroupConcat) update(groups []uint32, args []arrow.Array) error {
rows:
	for i, g := range groups {
		for _, arg := range args {
			if !validAt(arg, i) {
				continue rows
			}
		}
		if a.full[g] {
			continue
		}
		before := len(a.texts[g])
		if a.seen[g] {
			a.texts[g] = append(a.texts[g], aggGroupConcatSeparator)
		}
		a.seen[g] = true
		for _, arg := range args {
			a.texts[g] = aggAppendText(a.texts[g], arg, i)
		}
		if len(a.texts[g]) > aggGroupConcatMaxLen {
			a.texts[g] = cutUTF8(a.texts[g], aggGroupConcatMaxLen)
			a.full[g] = true
		}
		a.bytes += int64(len(a.texts[g]) - before)
	}
	return nil
}

// cutUTF8 returns the longest prefix of b of at most n bytes that does not split a UTF-8
// character.
func cutUTF8(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	end := n
	for end > 0 && !utf8.RuneStart(b[end]) {
		end--
	}
	return b[:end]
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
