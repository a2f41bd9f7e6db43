package exec

// A join table whose keys repeat over many build rows (orders by customer: ten or so a key)
// also lists its rows grouped by key, so that a probe reads a key's rows from consecutive
// entries instead of following the chain in next, where each step is a load that depends on the
// last and, over a build side larger than the caches, misses them (TPC-H Q13's customer LEFT
// JOIN orders). The lists are built by counting: their loads are independent of each other.

// joinGroupMinRows is the smallest build side that lists its rows grouped: a smaller one's
// chains stay in the caches. A variable so that tests group small tables.
var joinGroupMinRows = 1 << 16

// joinGroupMinRowsPerKey is the fewest build rows a key, on average, that make the grouped list
// worth its pass over the rows.
const joinGroupMinRowsPerKey = 2

// groupRows sets grouped and groupStart when the table has enough rows and rows a key: the rows
// of the key in slot i are grouped[groupStart[i]:groupStart[i+1]], ascending (the order of the
// chain from head through next). It runs once the table is built, before any probe or remove.
func (t *joinTable) groupRows(k *joinKeys) {
	if k.n < joinGroupMinRows || k.n < joinGroupMinRowsPerKey*t.live {
		return
	}
	slotOf := make([]int32, k.n)
	start := make([]int32, len(t.slots)+1)
	for row := range k.n {
		if k.null != nil && k.null[row] {
			slotOf[row] = -1
			continue
		}
		i := t.slotOf(k, row)
		slotOf[row] = int32(i)
		start[i+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	grouped := make([]int32, start[len(start)-1])
	fill := make([]int32, len(t.slots))
	copy(fill, start[:len(t.slots)])
	for row, i := range slotOf {
		if i >= 0 {
			grouped[fill[i]] = int32(row)
			fill[i]++
		}
	}
	t.grouped, t.groupStart = grouped, start
}

// slotOf is the slot of build row row of k, whose key is in the table.
func (t *joinTable) slotOf(k *joinKeys, row int) int {
	h := k.hash[row]
	mask := uint64(len(t.slots) - 1)
	for i := t.slot(h) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.head != 0 && s.hash == h && t.same(s.head-1, k, row) {
			return int(i)
		}
	}
}
