package exec

import (
	"bytes"
	"hash/maphash"
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/internal/errs"
)

// Hash join tables
//
// A joinTable maps the join key of every build row with no NULL key to its rows, as the hash
// joins compare keys: both sides' key columns are first cast to one type per key (the join's
// key types), then compared by value, NULL never matching, -0 equal to +0 and every NaN equal
// to every NaN (the row-key encoding's equality, which the joins used before).
//
// Keys of fixed-width types (integers, dates, timestamps, times, floats, booleans, decimals)
// are compared as 64-bit words, one per column (two for a decimal128: both sides have the same
// scale after the cast, so equal values have equal unscaled words). A key of one word is
// stored in the table itself and compared exactly; a key of several words is hashed, and a
// match of the hash is confirmed against the build row's words. Keys with a column of any other
// type (strings) are row-key encoded (RowKeyEncoder), and a hash match is confirmed against the
// build row's bytes.
//
// The table is open addressing with linear probing over one slice of slots, at most two thirds
// full: a lookup is a multiply, a shift and usually one cache line, where a Go map of
// encoded keys hashed and compared a byte string per row.

// joinKeyForm is how a join's key tuples are compared: words > 0 fixed-width words per row,
// or words == 0 row-key encoded bytes.
type joinKeyForm struct {
	words int
}

// joinKeyFormOf returns the form of keys of types: words when every type has a word form.
func joinKeyFormOf(types []arrow.DataType) joinKeyForm {
	words := 0
	for _, t := range types {
		w := keyWords(t)
		if w == 0 {
			return joinKeyForm{}
		}
		words += w
	}
	return joinKeyForm{words: words}
}

// keyWords is how many 64-bit words a key of type t takes, 0 when it has no word form.
func keyWords(t arrow.DataType) int {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.DATE32, arrow.TIMESTAMP, arrow.TIME64,
		arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL, arrow.NULL:
		return 1
	case arrow.DECIMAL128:
		return 2
	}
	return 0
}

// joinKeys are the key tuples of the rows of one batch in a joinKeyForm.
type joinKeys struct {
	n int
	// null[i] reports a NULL in row i's key; nil when no row has one.
	null []bool
	// hash is, per row, the key itself (one word) or its hash.
	hash []uint64
	// words holds, for keys of several words, each word column (words[w][row]).
	words [][]uint64
	// data and offs hold encoded keys: row i's is data[offs[i]:offs[i+1]].
	data []byte
	offs []int32
	// filterProbes and filterTurnedAway count this prober's probes through a table's filter
	// (over the batches a scratch serves); filterOff is set once too few were turned away.
	filterProbes, filterTurnedAway int
	filterOff                      bool
}

// joinHashSeed hashes encoded keys; builds and probes of one process share it.
var joinHashSeed = maphash.MakeSeed()

// joinHashMask keeps bits of the hashes of keys of several words and of encoded keys. Tests
// narrow it to make distinct keys collide; every bit counts otherwise.
var joinHashMask = ^uint64(0)

// newJoinKeys reads the key columns cols (cast to the join's key types, all of n rows) in form.
// scratch, when not nil, is reused for the result's slices.
func newJoinKeys(form joinKeyForm, cols []arrow.Array, n int, scratch *joinKeys) (*joinKeys, error) {
	k := scratch
	if k == nil {
		k = &joinKeys{}
	}
	k.n = n
	k.null = nil
	for _, c := range cols {
		if c.NullN() == 0 {
			continue
		}
		if k.null == nil {
			k.null = make([]bool, n)
		}
		for i := range n {
			if c.IsNull(i) {
				k.null[i] = true
			}
		}
	}
	k.hash = resize(k.hash, n)
	if form.words == 0 {
		return k, k.encode(cols)
	}
	if form.words == 1 {
		return k, fillWords(cols[0], k.hash, nil)
	}
	if len(k.words) != form.words {
		k.words = make([][]uint64, form.words)
	}
	w := 0
	for _, c := range cols {
		if cw := keyWords(c.DataType()); cw == 0 || w+cw > form.words {
			return nil, errs.Internalf("join key column of type %s does not fit the join's %d key words", c.DataType(), form.words)
		}
		k.words[w] = resize(k.words[w], n)
		hi := []uint64(nil)
		if keyWords(c.DataType()) == 2 {
			k.words[w+1] = resize(k.words[w+1], n)
			hi = k.words[w+1]
		}
		if err := fillWords(c, k.words[w], hi); err != nil {
			return nil, err
		}
		w += keyWords(c.DataType())
	}
	if w != form.words {
		return nil, errs.Internalf("join key columns give %d words, the join's key types %d", w, form.words)
	}
	for i := range n {
		h := uint64(0x243F6A8885A308D3)
		for _, col := range k.words {
			h = mixWord(h, col[i])
		}
		k.hash[i] = finishHash(h) & joinHashMask
	}
	return k, nil
}

// encode fills data, offs and hash with the row-key encoding of cols.
func (k *joinKeys) encode(cols []arrow.Array) error {
	enc, err := NewRowKeyEncoder(cols)
	if err != nil {
		return err
	}
	k.data = k.data[:0]
	k.offs = resize(k.offs, k.n+1)
	k.offs[0] = 0
	for i := range k.n {
		if k.null == nil || !k.null[i] {
			k.data = enc.Append(k.data, i)
		}
		if len(k.data) > math.MaxInt32 {
			return errs.Exhaustedf("join keys of one batch exceed %d bytes", math.MaxInt32)
		}
		k.offs[i+1] = int32(len(k.data))
		k.hash[i] = maphash.Bytes(joinHashSeed, k.data[k.offs[i]:k.offs[i+1]]) & joinHashMask
	}
	return nil
}

// fillWords writes the word form of c's values into lo (and the high words of a decimal into
// hi). Values under NULL are whatever the array holds; callers skip NULL rows.
func fillWords(c arrow.Array, lo, hi []uint64) error {
	switch a := c.(type) {
	case *array.Int64:
		for i, v := range a.Int64Values() {
			lo[i] = uint64(v)
		}
	case *array.Int32:
		for i, v := range a.Int32Values() {
			lo[i] = uint64(int64(v))
		}
	case *array.Int16:
		for i, v := range a.Int16Values() {
			lo[i] = uint64(int64(v))
		}
	case *array.Int8:
		for i, v := range a.Int8Values() {
			lo[i] = uint64(int64(v))
		}
	case *array.Date32:
		for i, v := range a.Date32Values() {
			lo[i] = uint64(int64(v))
		}
	case *array.Timestamp:
		for i, v := range a.TimestampValues() {
			lo[i] = uint64(v)
		}
	case *array.Time64:
		for i, v := range a.Time64Values() {
			lo[i] = uint64(v)
		}
	case *array.Float64:
		for i, v := range a.Float64Values() {
			lo[i] = floatWord(v)
		}
	case *array.Float32:
		for i, v := range a.Float32Values() {
			lo[i] = floatWord(float64(v))
		}
	case *array.Boolean:
		for i := range lo {
			lo[i] = 0
			if a.Value(i) {
				lo[i] = 1
			}
		}
	case *array.Null:
		clear(lo)
	case *array.Decimal128:
		if len(hi) != len(lo) {
			return errs.Internalf("decimal join key without room for its high words")
		}
		for i, v := range a.Values() {
			lo[i], hi[i] = v.LowBits(), uint64(v.HighBits())
		}
	default:
		return errs.Internalf("join key column of type %s has no word form", c.DataType())
	}
	return nil
}

// floatWord is f's bits with -0 folded into +0 and every NaN into one NaN.
func floatWord(f float64) uint64 {
	switch {
	case f == 0:
		f = 0
	case math.IsNaN(f):
		f = math.NaN()
	}
	return math.Float64bits(f)
}

func mixWord(h, w uint64) uint64 {
	return bits.RotateLeft64(h^(w*0x87C37B91114253D5), 31) * 0x4CF5AD432745937F
}

func finishHash(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xFF51AFD7ED558CCD
	h ^= h >> 33
	return h
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// joinTable is a hash join's table over the key tuples of its build rows: the first row of
// each key (in the slot) and the next row of the same key (next), rows in ascending order.
type joinTable struct {
	form  joinKeyForm
	slots []joinSlot
	shift uint // 64 - log2(len(slots))
	live  int  // keys not removed
	next  []int32
	// hasNullKey reports a build row with a NULL key (which no row matches).
	hasNullKey bool
	// build holds the build rows' keys where a hash match must be confirmed (several words,
	// encoded); nil for keys of one word.
	build *joinKeys
	// filter answers most probes of absent keys of a large table (nil bits: none).
	filter joinFilter
	// grouped lists the rows by key, those of slot i at groupStart[i] up to groupStart[i+1]
	// (nil: not listed; see groupRows).
	grouped, groupStart []int32
}

type joinSlot struct {
	hash    uint64 // the key (one word) or its hash
	head    int32  // first build row + 1; 0 marks an empty slot
	removed bool   // the key matched and was removed (see remove)
}

// joinTableMinSlots is the smallest table.
const joinTableMinSlots = 16

// newJoinTable hashes the rows of build, whose NULL keys are noted in hasNullKey and otherwise
// skipped. The table keeps build.
func newJoinTable(build *joinKeys, form joinKeyForm) *joinTable {
	t := &joinTable{form: form, next: make([]int32, build.n)}
	if form.words != 1 {
		t.build = build
	}
	// Room for a quarter of the rows as distinct keys; the table doubles as it fills. Sized for
	// every row, a build side with repeated keys (lineitem by order: four rows a key) would
	// clear and scatter over several times the memory it needs.
	t.slots = make([]joinSlot, slotsFor(build.n/4))
	t.shift = uint(64 - bits.TrailingZeros(uint(len(t.slots))))
	for row := build.n - 1; row >= 0; row-- {
		t.next[row] = -1
		if build.null != nil && build.null[row] {
			t.hasNullKey = true
			continue
		}
		t.insert(build, row)
	}
	t.groupRows(build)
	if f, ok := newExactJoinFilter(t); ok {
		t.filter = f
	} else if len(t.slots) >= joinFilterMinSlots {
		t.filter = newJoinFilter(t.live)
		for _, s := range t.slots {
			if s.head != 0 {
				t.filter.add(s.hash)
			}
		}
	}
	return t
}

// slotsFor is the power-of-two table size that holds n keys at most two thirds full.
func slotsFor(n int) int {
	s := joinTableMinSlots
	for 2*s < 3*n {
		s *= 2
	}
	return s
}

func (t *joinTable) slot(h uint64) uint64 {
	return (h * 0x9E3779B97F4A7C15) >> t.shift
}

// insert puts row before the other rows of its key.
func (t *joinTable) insert(k *joinKeys, row int) {
	h := k.hash[row]
	mask := uint64(len(t.slots) - 1)
	for i := t.slot(h) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.head == 0 {
			if 3*(t.live+1) > 2*len(t.slots) {
				t.grow()
				t.insert(k, row)
				return
			}
			s.hash, s.head = h, int32(row)+1
			t.live++
			return
		}
		if s.hash == h && t.same(s.head-1, k, row) {
			t.next[row] = s.head - 1
			s.head = int32(row) + 1
			return
		}
	}
}

// same reports whether build row b has the key of row of k (whose hash equals b's).
func (t *joinTable) same(b int32, k *joinKeys, row int) bool {
	switch {
	case t.form.words == 1:
		return true
	case t.form.words > 1:
		for w, col := range t.build.words {
			if col[b] != k.words[w][row] {
				return false
			}
		}
		return true
	}
	return bytes.Equal(t.build.data[t.build.offs[b]:t.build.offs[b+1]], k.data[k.offs[row]:k.offs[row+1]])
}

// find returns the slot of the key of row of k (probe keys in the table's form), or -1 when the
// table has no rows of it. The caller skips rows with a NULL key.
func (t *joinTable) find(k *joinKeys, row int) int {
	h := k.hash[row]
	if t.filter.bits != nil && !k.filterOff {
		if k.filterProbes == joinFilterTrial && 4*k.filterTurnedAway < k.filterProbes {
			k.filterOff = true
		} else {
			k.filterProbes++
			if !t.filter.mayHave(h) {
				k.filterTurnedAway++
				return -1
			}
		}
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.slot(h) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.head == 0 {
			return -1
		}
		if s.hash == h && t.same(s.head-1, k, row) {
			if s.removed {
				return -1
			}
			return int(i)
		}
	}
}

// head is the first build row of the key in slot i.
func (t *joinTable) head(i int) int32 { return t.slots[i].head - 1 }

// remove drops the key in slot i: find no longer returns it. Its slot stays, so that the keys
// probed past it are still found.
func (t *joinTable) remove(i int) {
	if !t.slots[i].removed {
		t.slots[i].removed = true
		t.live--
	}
}

// grow doubles the table (while it is built: no key is removed yet).
func (t *joinTable) grow() {
	old := t.slots
	t.slots = make([]joinSlot, 2*len(old))
	t.shift--
	mask := uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.head == 0 {
			continue
		}
		i := t.slot(s.hash) & mask
		for t.slots[i].head != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}
