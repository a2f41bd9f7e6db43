package memory

import (
	"bytes"
	"os"
	"syscall"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	memalloc "github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// writePartFile writes batches of schema as an Arrow IPC file at path and returns its size. The
// file is uncompressed on purpose: its buffers are then used in place once mapped (mapPartFile),
// so a read of a partition on disk is a page-cache read with no decode and no copy. It is not
// synced: the file is a cache that dies with the process.
//
// The IPC file format holds one dictionary per field, so a partition with dictionary columns is
// written as one batch (its batches concatenated, dictionaries unified; rows keep their order).
func writePartFile(path string, schema *arrow.Schema, batches []arrow.RecordBatch) (int64, error) {
	if hasDictionary(schema) && len(batches) > 1 {
		nonEmpty := make([]arrow.RecordBatch, 0, len(batches))
		for _, b := range batches {
			if b.NumRows() > 0 {
				nonEmpty = append(nonEmpty, b)
			}
		}
		one, err := concatBatches(schema, nonEmpty)
		if err != nil {
			return 0, errs.Internalf("writing a dataset partition to disk: %v", err)
		}
		defer one.Release()
		batches = []arrow.RecordBatch{one}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, errs.Internalf("writing a dataset partition to disk: %v", err)
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema))
	if err == nil {
		for _, b := range batches {
			if err = w.Write(b); err != nil {
				break
			}
		}
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	var size int64
	if err == nil {
		var st os.FileInfo
		if st, err = f.Stat(); err == nil {
			size = st.Size()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return 0, errs.Exhaustedf("writing a dataset partition to %s: %v", path, err)
	}
	return size, nil
}

func hasDictionary(schema *arrow.Schema) bool {
	for _, f := range schema.Fields() {
		if hasDictionaryType(f.Type) {
			return true
		}
	}
	return false
}

func hasDictionaryType(t arrow.DataType) bool {
	if t.ID() == arrow.DICTIONARY {
		return true
	}
	if n, ok := t.(arrow.NestedType); ok {
		for _, f := range n.Fields() {
			if hasDictionaryType(f.Type) {
				return true
			}
		}
	}
	return false
}

// mapPartFile maps the Arrow IPC file at path and returns its batches, whose buffers point into
// the mapping (no copy). Every one of those buffers is a slice of one parent buffer that owns the
// mapping, so Arrow's reference counts decide when it ends: the mapping is unmapped when the
// caller has released the batches and every array anyone retained from them is released too. A
// reader that keeps a column of a partition on disk past the partition's drop keeps it valid.
// onUnmap (may be nil) is called once the mapping ends.
func mapPartFile(path string, schema *arrow.Schema, onUnmap func()) ([]arrow.RecordBatch, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errs.Internalf("opening a dataset partition file: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, errs.Internalf("opening a dataset partition file: %v", err)
	}
	if st.Size() == 0 {
		return nil, errs.Internalf("dataset partition file %s is empty", path)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, errs.Exhaustedf("mapping dataset partition file %s: %v", path, err)
	}
	parent := memalloc.NewBufferWithAllocator(data, unmapper{onUnmap: onUnmap})
	defer parent.Release()
	var rdr *ipc.FileReader
	if hasDictionary(schema) {
		// arrow-go's mapped reader cannot read dictionaries (it has no dictionary memo): such a
		// file is read through ReadAt, which copies its buffers to the heap.
		rdr, err = ipc.NewFileReader(bytes.NewReader(data))
	} else {
		rdr, err = ipc.NewMappedFileReader(data)
	}
	if err != nil {
		return nil, errs.Internalf("reading dataset partition file %s: %v", path, err)
	}
	defer rdr.Close()
	out := make([]arrow.RecordBatch, 0, rdr.NumRecords())
	for i := range rdr.NumRecords() {
		rec, err := rdr.RecordBatchAt(i)
		if err != nil {
			releaseBatches(out)
			return nil, errs.Internalf("reading dataset partition file %s: %v", path, err)
		}
		out = append(out, rebase(rec, parent, data))
		rec.Release()
	}
	return out, nil
}

// rebase returns rec with every buffer that lies in mapping made a slice of parent (which owns
// the mapping), so that each keeps the mapping alive; other buffers (empty ones) are shared.
func rebase(rec arrow.RecordBatch, parent *memalloc.Buffer, mapping []byte) arrow.RecordBatch {
	cols := make([]arrow.Array, rec.NumCols())
	for i, c := range rec.Columns() {
		d := rebaseData(c.Data(), parent, mapping)
		cols[i] = array.MakeFromData(d)
		d.Release()
	}
	out := array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

func rebaseData(d arrow.ArrayData, parent *memalloc.Buffer, mapping []byte) arrow.ArrayData {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mapping)))
	bufs := make([]*memalloc.Buffer, len(d.Buffers()))
	for i, b := range d.Buffers() {
		if b == nil {
			continue
		}
		held := b.Bytes()
		at := uintptr(unsafe.Pointer(unsafe.SliceData(held)))
		if len(held) > 0 && at >= base && at+uintptr(len(held)) <= base+uintptr(len(mapping)) {
			bufs[i] = memalloc.SliceBuffer(parent, int(at-base), len(held))
			continue
		}
		b.Retain()
		bufs[i] = b
	}
	children := make([]arrow.ArrayData, len(d.Children()))
	for i, c := range d.Children() {
		children[i] = rebaseData(c, parent, mapping)
	}
	out := array.NewData(d.DataType(), d.Len(), bufs, children, d.NullN(), d.Offset())
	// Dictionary returns a typed nil for other types: only a dictionary column has one.
	if d.DataType().ID() == arrow.DICTIONARY {
		rd := rebaseData(d.Dictionary(), parent, mapping)
		out.SetDictionary(rd)
		rd.Release()
	}
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	for _, c := range children {
		c.Release()
	}
	return out
}

// unmapper is the allocator of a mapping's parent buffer: freeing it unmaps it. It allocates
// nothing (the parent buffer is never resized).
type unmapper struct{ onUnmap func() }

func (unmapper) Allocate(int) []byte           { return nil }
func (unmapper) Reallocate(int, []byte) []byte { return nil }
func (u unmapper) Free(b []byte) {
	// Munmap fails only for a range that is not a mapping, which the parent buffer always is.
	_ = syscall.Munmap(b)
	if u.onUnmap != nil {
		u.onUnmap()
	}
}

func releaseBatches(bs []arrow.RecordBatch) {
	for _, b := range bs {
		b.Release()
	}
}
