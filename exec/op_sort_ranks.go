package exec

import (
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// A sort of one run compares a string key of few distinct values by rank instead of by bytes:
// each distinct string is ranked once (byte order, as sortPairComparator compares them) and a
// comparison reads two int32s, where ties on the keys before it (TPC-H Q16's count, brand, type
// and size: 18 000 rows of 25 brands and 150 types) otherwise cost a byte comparison each.

// sortRankMinRows is the smallest run whose string keys are ranked.
const sortRankMinRows = 1024

// sortRankMaxDistinct bounds, as a share of the rows (1/n), the distinct strings of a key that
// is ranked: more, and hashing every row costs more than the byte comparisons it saves.
const sortRankMaxDistinct = 4

// sortRanks returns the rank of each row's string in k among k's distinct strings in byte order,
// -1 for NULL (first ascending, as sortPairComparator orders NULLs), or false when k has too
// few rows or too many distinct strings.
func sortRanks(k *array.String) ([]int32, bool) {
	n := k.Len()
	if n < sortRankMinRows {
		return nil, false
	}
	ids := map[string]int32{}
	var distinct []string
	rows := make([]int32, n)
	for i := range n {
		if k.IsNull(i) {
			rows[i] = -1
			continue
		}
		s := k.Value(i)
		id, ok := ids[s]
		if !ok {
			if len(distinct) >= n/sortRankMaxDistinct {
				return nil, false
			}
			id = int32(len(distinct))
			ids[s] = id
			distinct = append(distinct, s)
		}
		rows[i] = id
	}
	byValue := make([]int32, len(distinct))
	for i := range byValue {
		byValue[i] = int32(i)
	}
	slices.SortFunc(byValue, func(a, b int32) int { return strings.Compare(distinct[a], distinct[b]) })
	rank := make([]int32, len(distinct))
	for r, id := range byValue {
		rank[id] = int32(r)
	}
	for i, id := range rows {
		if id >= 0 {
			rows[i] = rank[id]
		}
	}
	return rows, true
}

// sortRankedComparator orders rows a and b of k by sortRanks, or is nil when k is not ranked.
func sortRankedComparator(k arrow.Array) func(a, b int32) int {
	if s, ok := k.(*array.String); ok {
		if ranks, ok := sortRanks(s); ok {
			return sortOrdered(ranks, ranks)
		}
	}
	return nil
}
