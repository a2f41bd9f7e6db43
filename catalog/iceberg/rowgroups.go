package iceberg

import (
	"bytes"
	"container/list"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/big"
	"sync"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/internal/safe"
)

// Row-group pruning at planning time. For a scan with a filter, the Parquet footer of each data
// file that file pruning kept is read (once per file: footers are cached by path and size, as
// data files are immutable), each row group's column statistics are tested against the filter
// with the rules planning uses (translate), and the file's task becomes byte ranges covering
// only the row groups that may hold a matching row. iceberg-go v0.7.0 reads a row group of a
// ranged task iff the group's split offset (the planning split offsets when they are valid,
// else the first page offset in the footer) lies in [Start, Start+Length), and it keeps row
// positions relative to the whole file, so position deletes still apply to a ranged task.

// maxFooterFiles bounds the files whose footers one plan reads; a plan keeping more files is
// left to iceberg-go's pruning while reading.
const maxFooterFiles = 4096

// footerReaders bounds the footers one plan reads at once.
const footerReaders = 8

// footerCacheBytes bounds the footers a catalog remembers, by their encoded size.
const footerCacheBytes = 64 << 20

// fileFooter is what planning needs of one Parquet footer.
type fileFooter struct {
	size   int64 // the file's size when read
	groups []rowGroup
	// kinds describe the top-level primitive columns by field id, for comparing statistics.
	kinds map[int]statKind
	cost  int64 // encoded footer size, for the cache bound
}

// rowGroup is one row group's position, size and statistics.
type rowGroup struct {
	offset int64 // where iceberg-go places the group when selecting by range
	rows   int64
	sizes  map[int]int64 // compressed bytes per field id (leaves; top-level id without ids)
	stats  map[int]colStats
}

// colStats are one column chunk's statistics. nulls is -1 when unknown; min and max are nil
// when unknown, else normalized by the column's statKind (int64, *big.Int or string).
type colStats struct {
	values, nulls int64
	min, max      any
}

// statKind says how a Parquet column's statistics compare with Iceberg literals.
type statKind struct {
	kind  int
	unit  schema.TimeUnitType // kindTime, kindTimestamp
	scale int32               // kindDecimal
}

const (
	kindOther = iota // statistics used for null counts only
	kindInt          // signed integers (INT32, INT64)
	kindBool
	kindDate
	kindTime
	kindTimestamp
	kindDecimal
	kindString
)

// footerCache remembers fileFooters by path and size, least recently used first out.
type footerCache struct {
	mu    sync.Mutex
	byKey map[footerKey]*list.Element
	lru   list.List // values are *footerEntry
	cost  int64
}

type footerKey struct {
	path string
	size int64
}

type footerEntry struct {
	key    footerKey
	footer *fileFooter
}

func (c *footerCache) get(k footerKey) *fileFooter {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[k]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*footerEntry).footer
	}
	return nil
}

func (c *footerCache) put(k footerKey, f *fileFooter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[footerKey]*list.Element{}
	}
	if _, ok := c.byKey[k]; ok || f.cost > footerCacheBytes/4 {
		return
	}
	c.byKey[k] = c.lru.PushFront(&footerEntry{key: k, footer: f})
	c.cost += f.cost
	for c.cost > footerCacheBytes {
		old := c.lru.Back()
		c.lru.Remove(old)
		e := old.Value.(*footerEntry)
		delete(c.byKey, e.key)
		c.cost -= e.footer.cost
	}
}

// footer returns the parsed footer of a data file, reading it through fsys on a cache miss.
func (t *Table) footer(ctx context.Context, fsys iceio.IO, f iceberg.DataFile) (*fileFooter, error) {
	key := footerKey{f.FilePath(), f.FileSizeBytes()}
	if ft := t.cat.footers.get(key); ft != nil {
		return ft, nil
	}
	meta, size, err := readFooter(ctx, fsys, f)
	if err != nil {
		return nil, err
	}
	ft, err := summarizeFooter(meta, size, t.tbl.Metadata().NameMapping())
	if err != nil {
		return nil, err
	}
	t.cat.footers.put(key, ft)
	return ft, nil
}

// readFooter reads a Parquet file's footer: its last 8 bytes, then the footer they locate. The
// S3 IO serves both from one ranged read of the file's tail (see storage.File) unless the
// footer is longer than that tail.
func readFooter(ctx context.Context, fsys iceio.IO, f iceberg.DataFile) (*metadata.FileMetaData, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	file, err := fsys.Open(f.FilePath())
	if err != nil {
		return nil, 0, err
	}
	defer file.Close()
	size := f.FileSizeBytes()
	if st, err := file.Stat(); err == nil && st.Size() > 0 {
		size = st.Size()
	}
	if size < 12 {
		return nil, 0, fmt.Errorf("%d bytes is too short for a Parquet file", size)
	}
	readAt := func(p []byte, off int64) error {
		if ra, ok := file.(io.ReaderAt); ok {
			n, err := ra.ReadAt(p, off)
			if n == len(p) {
				return nil
			}
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if _, err := file.Seek(off, io.SeekStart); err != nil {
			return err
		}
		_, err := io.ReadFull(file, p)
		return err
	}
	tail := make([]byte, 8)
	if err := readAt(tail, size-8); err != nil {
		return nil, 0, err
	}
	if !bytes.Equal(tail[4:], []byte("PAR1")) {
		return nil, 0, fmt.Errorf("not a plain Parquet file (trailing magic %q)", tail[4:])
	}
	n := int64(binary.LittleEndian.Uint32(tail))
	if n <= 0 || n+12 > size {
		return nil, 0, fmt.Errorf("parquet footer length %d does not fit a file of %d bytes", n, size)
	}
	buf := make([]byte, n)
	if err := readAt(buf, size-8-n); err != nil {
		return nil, 0, err
	}
	meta, err := metadata.NewFileMetaData(buf, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("parquet footer: %w", err)
	}
	return meta, size, nil
}

// summarizeFooter extracts the row groups' offsets, sizes and statistics. Columns map to Iceberg
// field ids by the ids the file records, or by the table's name mapping when it records none
// (as iceberg-go does when reading).
func summarizeFooter(meta *metadata.FileMetaData, size int64, mapping iceberg.NameMapping) (*fileFooter, error) {
	sc := meta.Schema
	ncols := sc.NumColumns()
	hasIDs := false
	for i := 0; i < ncols; i++ {
		if sc.Column(i).SchemaNode().FieldID() >= 0 {
			hasIDs = true
			break
		}
	}
	ids := make([]int, ncols)    // field id each leaf's size counts for (-1: none)
	topIDs := make([]int, ncols) // field id of a top-level primitive leaf (-1: not one)
	ft := &fileFooter{size: size, kinds: map[int]statKind{}, cost: int64(meta.Size())}
	for i := 0; i < ncols; i++ {
		col := sc.Column(i)
		path := col.ColumnPath()
		ids[i], topIDs[i] = -1, -1
		switch {
		case hasIDs:
			ids[i] = int(col.SchemaNode().FieldID())
		case len(path) > 0:
			ids[i] = mappedID(mapping, path[0])
		}
		if len(path) == 1 && col.MaxRepetitionLevel() == 0 && ids[i] >= 0 {
			topIDs[i] = ids[i]
			ft.kinds[ids[i]] = kindOf(col)
		}
	}
	for g := 0; g < meta.NumRowGroups(); g++ {
		rg := meta.RowGroup(g)
		info := rowGroup{offset: splitOffset(rg), rows: rg.NumRows(), sizes: map[int]int64{}, stats: map[int]colStats{}}
		for i := 0; i < rg.NumColumns() && i < ncols; i++ {
			cc, err := rg.ColumnChunk(i)
			if err != nil {
				return nil, err
			}
			if ids[i] >= 0 {
				info.sizes[ids[i]] += cc.TotalCompressedSize()
			}
			if topIDs[i] < 0 {
				continue
			}
			info.stats[topIDs[i]] = chunkStats(cc, ft.kinds[topIDs[i]])
		}
		ft.groups = append(ft.groups, info)
	}
	return ft, nil
}

// mappedID is the field id the name mapping gives a top-level column, -1 when none.
func mappedID(mapping iceberg.NameMapping, name string) int {
	for _, m := range mapping {
		for _, n := range m.Names {
			if n == name {
				return m.ID()
			}
		}
	}
	return -1
}

// splitOffset is where iceberg-go places a row group when selecting row groups by byte range
// without usable planning split offsets: its first column chunk's first page.
func splitOffset(rg *metadata.RowGroupMetaData) int64 {
	if rg.NumColumns() > 0 {
		if c, err := rg.ColumnChunk(0); err == nil {
			data := c.DataPageOffset()
			if c.HasDictionaryPage() {
				if dict := c.DictionaryPageOffset(); dict >= 0 && (data < 0 || dict < data) {
					return dict
				}
			}
			if data >= 0 {
				return data
			}
		}
	}
	return rg.FileOffset()
}

func kindOf(col *schema.Column) statKind {
	lt := col.LogicalType()
	switch col.PhysicalType() {
	case parquet.Types.Boolean:
		return statKind{kind: kindBool}
	case parquet.Types.Int32, parquet.Types.Int64:
		switch l := lt.(type) {
		case nil, schema.NoLogicalType:
			return statKind{kind: kindInt}
		case schema.IntLogicalType:
			if l.IsSigned() {
				return statKind{kind: kindInt}
			}
		case schema.DateLogicalType:
			return statKind{kind: kindDate}
		case schema.TimeLogicalType:
			return statKind{kind: kindTime, unit: l.TimeUnit()}
		case schema.TimestampLogicalType:
			return statKind{kind: kindTimestamp, unit: l.TimeUnit()}
		case schema.DecimalLogicalType:
			return statKind{kind: kindDecimal, scale: l.Scale()}
		}
	case parquet.Types.ByteArray, parquet.Types.FixedLenByteArray:
		switch l := lt.(type) {
		case schema.StringLogicalType:
			if col.PhysicalType() == parquet.Types.ByteArray {
				return statKind{kind: kindString}
			}
		case schema.DecimalLogicalType:
			return statKind{kind: kindDecimal, scale: l.Scale()}
		}
	}
	return statKind{kind: kindOther}
}

// chunkStats reads a column chunk's statistics, normalized by kind.
func chunkStats(cc *metadata.ColumnChunkMetaData, k statKind) colStats {
	cs := colStats{values: cc.NumValues(), nulls: -1}
	st, err := cc.Statistics()
	if err != nil || st == nil {
		return cs
	}
	if st.HasNullCount() {
		cs.nulls = st.NullCount()
	}
	if !st.HasMinMax() || k.kind == kindOther {
		return cs
	}
	switch s := st.(type) {
	case *metadata.BooleanStatistics:
		cs.min, cs.max = boolInt(s.Min()), boolInt(s.Max())
	case *metadata.Int32Statistics:
		cs.min, cs.max = int64(s.Min()), int64(s.Max())
	case *metadata.Int64Statistics:
		cs.min, cs.max = s.Min(), s.Max()
	case *metadata.ByteArrayStatistics:
		if k.kind == kindDecimal {
			cs.min, cs.max = twosComplement(s.Min()), twosComplement(s.Max())
		} else {
			cs.min, cs.max = string(s.Min()), string(s.Max())
		}
	case *metadata.FixedLenByteArrayStatistics:
		if k.kind == kindDecimal {
			cs.min, cs.max = twosComplement(s.Min()), twosComplement(s.Max())
		}
	}
	if k.kind == kindDecimal {
		// Integer-backed decimals compare as unscaled integers too.
		if v, ok := cs.min.(int64); ok {
			cs.min = big.NewInt(v)
		}
		if v, ok := cs.max.(int64); ok {
			cs.max = big.NewInt(v)
		}
	}
	return cs
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// twosComplement reads a big-endian two's-complement integer (Parquet's decimal bytes).
func twosComplement(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	v := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// groupFilter tests row groups against the translatable part of a catalog.Filter: a row group
// is dropped only when some disjunction, all of whose predicates translate, has no predicate
// that a row of the group may satisfy.
type groupFilter [][]translated

func newGroupFilter(f catalog.Filter, sc *iceberg.Schema) groupFilter {
	fields := sc.Fields()
	var gf groupFilter
	for _, d := range f {
		var ors []translated
		ok := len(d) > 0
		for _, p := range d {
			tp, good := translate(p, fields)
			if !good {
				ok = false
				break
			}
			ors = append(ors, tp)
		}
		if ok {
			gf = append(gf, ors)
		}
	}
	return gf
}

// mayMatch says whether a row of g may satisfy the filter.
func (gf groupFilter) mayMatch(g rowGroup, kinds map[int]statKind) bool {
	for _, ors := range gf {
		any := false
		for _, tp := range ors {
			if mayMatch(tp, g, kinds) {
				any = true
				break
			}
		}
		if !any {
			return false
		}
	}
	return true
}

// mayMatch says whether a row of g may satisfy tp. A NULL satisfies only IS NULL, so a chunk
// of NULLs only satisfies nothing else; missing statistics or a column the footer lacks
// (added later, or not mapped) decide nothing.
func mayMatch(tp translated, g rowGroup, kinds map[int]statKind) bool {
	st, ok := g.stats[tp.field.ID]
	if !ok {
		return true
	}
	allNull := st.nulls >= 0 && st.nulls >= st.values
	switch tp.op {
	case iceberg.OpIsNull:
		return st.nulls != 0
	case iceberg.OpNotNull:
		return !allNull
	}
	if allNull {
		return false
	}
	if st.min == nil || st.max == nil {
		return true
	}
	k := kinds[tp.field.ID]
	vals := make([]any, len(tp.lits))
	for i, lit := range tp.lits {
		v, ok := literalValue(lit, tp.field.Type, k)
		if !ok {
			return true
		}
		vals[i] = v
	}
	lo, hi := st.min, st.max
	switch tp.op {
	case iceberg.OpEQ, iceberg.OpIn:
		for _, v := range vals {
			if compare(lo, v) <= 0 && compare(v, hi) <= 0 {
				return true
			}
		}
		return false
	case iceberg.OpLT:
		return compare(lo, vals[0]) < 0
	case iceberg.OpLTEQ:
		return compare(lo, vals[0]) <= 0
	case iceberg.OpGT:
		return compare(hi, vals[0]) > 0
	case iceberg.OpGTEQ:
		return compare(hi, vals[0]) >= 0
	}
	return true
}

// literalValue normalizes a literal of column type t for comparing with statistics of kind k;
// ok is false when the two do not compare (another encoding, unit or scale).
func literalValue(lit iceberg.Literal, t iceberg.Type, k statKind) (any, bool) {
	switch v := lit.Any().(type) {
	case int32:
		return int64(v), k.kind == kindInt
	case int64:
		return v, k.kind == kindInt
	case bool:
		return boolInt(v), k.kind == kindBool
	case string:
		return v, k.kind == kindString
	case iceberg.Date:
		return int64(v), k.kind == kindDate
	case iceberg.Time:
		return int64(v), k.kind == kindTime && k.unit == schema.TimeUnitMicros
	case iceberg.Timestamp:
		return int64(v), k.kind == kindTimestamp && k.unit == schema.TimeUnitMicros
	case iceberg.TimestampNano:
		return int64(v), k.kind == kindTimestamp && k.unit == schema.TimeUnitNanos
	case iceberg.Decimal:
		return v.Val.BigInt(), k.kind == kindDecimal && int(k.scale) == v.Scale
	}
	// Floats: NaN is left out of Parquet's min/max, so they prune nothing here.
	return nil, false
}

// compare orders two normalized values of one kind.
func compare(a, b any) int {
	switch x := a.(type) {
	case int64:
		y := b.(int64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case string:
		y := b.(string)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case *big.Int:
		return x.Cmp(b.(*big.Int))
	}
	return 0
}

// prunedTask is a task after row-group pruning: groups is the number of row groups it reads
// and bytes their projected columns' compressed size, both -1 when the footer was not read.
type prunedTask struct {
	task   table.FileScanTask
	groups int64
	bytes  int64
	// tested says the task's row groups were tested against the filter with its file's
	// footer statistics (see readResidual).
	tested bool
}

// pruneResult is what row-group pruning did to a plan.
type pruneResult struct {
	tasks      []prunedTask
	considered int64 // row groups in the tasks before pruning; -1 when unknown
}

// pruneRowGroups reads the footers of the tasks' Parquet files (through fsys) and narrows each
// task to the runs of row groups that may match gf. A file whose footer cannot be read keeps
// its task unchanged: the read will report what is wrong with it.
func (t *Table) pruneRowGroups(ctx context.Context, fsys iceio.IO, tasks []table.FileScanTask, gf groupFilter, ids map[int]bool) pruneResult {
	footers := make([]*fileFooter, len(tasks))
	var wg sync.WaitGroup
	sem := make(chan struct{}, footerReaders)
	for i, task := range tasks {
		if task.File.FileFormat() != iceberg.ParquetFile {
			continue
		}
		wg.Add(1)
		// A footer whose reading panicked counts as unreadable (the panic is logged).
		safe.Spawn("reading a Parquet footer", func() error {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ft, err := t.footer(ctx, fsys, task.File); err == nil {
				footers[i] = ft
			}
			return nil
		}, nil)
	}
	wg.Wait()

	var res pruneResult
	for i, task := range tasks {
		ft := footers[i]
		if ft == nil {
			res.tasks = append(res.tasks, prunedTask{task: task, groups: -1, bytes: -1})
			if n, ok := rowGroupsIn(task); ok && res.considered >= 0 {
				res.considered += n
			} else {
				res.considered = -1
			}
			continue
		}
		offsets := groupOffsets(task.File, ft)
		covered := coveredGroups(task, ft, offsets)
		if res.considered >= 0 {
			res.considered += int64(len(covered))
		}
		var kept []int
		for _, g := range covered {
			if gf.mayMatch(ft.groups[g], ft.kinds) {
				kept = append(kept, g)
			}
		}
		if len(kept) == len(covered) {
			res.tasks = append(res.tasks, prunedTask{task: task, groups: int64(len(kept)), bytes: groupBytes(ft, kept, ids), tested: true})
			continue
		}
		// Runs of consecutive kept groups become one ranged task each; the range of a run
		// reaches the next group's offset (or the file's end), so it selects exactly the run.
		for s := 0; s < len(kept); {
			e := s
			for e+1 < len(kept) && kept[e+1] == kept[e]+1 {
				e++
			}
			first, last := kept[s], kept[e]
			end := ft.size
			if last+1 < len(offsets) {
				end = offsets[last+1]
			}
			nt := task
			nt.Start, nt.Length = offsets[first], end-offsets[first]
			res.tasks = append(res.tasks, prunedTask{task: nt, groups: int64(e - s + 1), bytes: groupBytes(ft, kept[s:e+1], ids), tested: true})
			s = e + 1
		}
	}
	return res
}

// groupOffsets are the row-group offsets iceberg-go selects ranges by: the file's split offsets
// when there is a valid one per row group, else the footer's.
func groupOffsets(f iceberg.DataFile, ft *fileFooter) []int64 {
	offs := f.SplitOffsets()
	valid := len(offs) == len(ft.groups)
	for i, o := range offs {
		if !valid || o < 0 || o >= ft.size || (i > 0 && o <= offs[i-1]) {
			valid = false
			break
		}
	}
	if valid {
		return offs
	}
	out := make([]int64, len(ft.groups))
	for i, g := range ft.groups {
		out[i] = g.offset
	}
	return out
}

// coveredGroups lists the row groups a task reads: all of them for a whole-file task, else
// those whose offset lies in its range.
func coveredGroups(task table.FileScanTask, ft *fileFooter, offsets []int64) []int {
	var out []int
	whole := task.Start == 0 && (task.Length == 0 || task.Length == task.File.FileSizeBytes())
	for g := range ft.groups {
		if whole || (offsets[g] >= task.Start && offsets[g] < task.Start+task.Length) {
			out = append(out, g)
		}
	}
	return out
}

// groupBytes is the compressed size of the projected columns in the given row groups.
func groupBytes(ft *fileFooter, groups []int, ids map[int]bool) int64 {
	var n int64
	for _, g := range groups {
		for id, size := range ft.groups[g].sizes {
			if ids[id] {
				n += size
			}
		}
	}
	return n
}
