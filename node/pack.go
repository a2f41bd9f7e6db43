package node

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/hugepage"
)

// packSlabBytes bounds the allocations a partition is packed into, so that packing holds at most
// this much beyond the batches not yet packed.
const packSlabBytes = 64 << 20

// packPartition copies the batches of a partition about to be held in memory into a few large
// allocations of mem (slabs of up to 64 MiB), every buffer of its exact length at a 64-byte
// boundary, and asks the kernel to back the slabs with huge pages (internal/hugepage). It takes
// over batches, releasing each once copied.
//
// A partition is held for long and counted by the bytes it holds (memcat.PartData.Bytes), so it
// must not keep the slack of the builders that made it: array builders double their capacity
// as they grow, so a column decoded from Parquet may reserve up to twice its bytes. And a
// training read picks the partition's rows in chunks at random: in buffers scattered over the
// heap's 4 KiB pages nearly every chunk costs an address translation miss; in slabs of huge
// pages, few do.
//
// Buffers that several arrays share (a dictionary of every batch) stay shared. A slab is freed
// when the last buffer carved out of it is.
func packPartition(batches []arrow.RecordBatch, mem memory.Allocator) []arrow.RecordBatch {
	p := &packer{copied: map[*memory.Buffer]*memory.Buffer{}}
	// left is the room the buffers of the batches not packed yet take, each counted once.
	left := p.bytes(batches, map[*memory.Buffer]bool{})
	for i, b := range batches {
		need := p.bytes(batches[i:i+1], map[*memory.Buffer]bool{})
		if p.slab == nil || p.used+need > p.slab.Len() {
			p.seal()
			p.slab = memory.NewResizableBuffer(mem)
			p.slab.Resize(max(need, min(left, packSlabBytes)))
			p.used = 0
		}
		left -= need
		cols := make([]arrow.Array, b.NumCols())
		for c, col := range b.Columns() {
			data := p.data(col.Data())
			cols[c] = array.MakeFromData(data)
			data.Release()
		}
		batches[i] = array.NewRecordBatch(b.Schema(), cols, b.NumRows())
		for _, c := range cols {
			c.Release()
		}
		b.Release()
	}
	p.seal()
	for _, c := range p.copied {
		c.Release() // the batches hold their copies
	}
	return batches
}

// packer copies buffers into the current slab, of which used bytes are taken.
type packer struct {
	slab *memory.Buffer
	used int
	// copied maps every buffer copied to its copy.
	copied map[*memory.Buffer]*memory.Buffer
}

// padded is n rounded up to the 64-byte boundary the next buffer starts at.
func padded(n int) int { return (n + 63) &^ 63 }

// bytes is the room the buffers of batches not copied yet, and not in seen, take in a slab;
// it adds them to seen.
func (p *packer) bytes(batches []arrow.RecordBatch, seen map[*memory.Buffer]bool) int {
	n := 0
	for _, b := range batches {
		for _, c := range b.Columns() {
			eachBuffer(c.Data(), func(buf *memory.Buffer) {
				if !seen[buf] && p.copied[buf] == nil {
					seen[buf] = true
					n += padded(buf.Len())
				}
			})
		}
	}
	return n
}

// data returns a copy of d whose buffers are copies in slabs.
func (p *packer) data(d arrow.ArrayData) arrow.ArrayData {
	bufs := make([]*memory.Buffer, len(d.Buffers()))
	for i, buf := range d.Buffers() {
		if buf != nil {
			bufs[i] = p.buffer(buf)
		}
	}
	children := make([]arrow.ArrayData, len(d.Children()))
	for i, c := range d.Children() {
		children[i] = p.data(c)
	}
	var out arrow.ArrayData
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		packed := p.data(dict)
		out = array.NewDataWithDictionary(d.DataType(), d.Len(), bufs, d.NullN(), d.Offset(), packed.(*array.Data))
		packed.Release()
	} else {
		out = array.NewData(d.DataType(), d.Len(), bufs, children, d.NullN(), d.Offset())
	}
	for _, c := range children {
		c.Release()
	}
	return out
}

// buffer returns buf's copy (the one made before, if any), carved out of the current slab.
func (p *packer) buffer(buf *memory.Buffer) *memory.Buffer {
	if c := p.copied[buf]; c != nil {
		return c
	}
	n := buf.Len()
	c := memory.SliceBuffer(p.slab, p.used, n)
	copy(c.Bytes(), buf.Bytes())
	p.used += padded(n)
	p.copied[buf] = c
	return c
}

// seal lets the current slab go (it is freed with the last buffer carved out of it) and asks
// for huge pages behind it.
func (p *packer) seal() {
	if p.slab == nil {
		return
	}
	hugepage.Collapse([][]byte{p.slab.Bytes()[:p.used]})
	p.slab.Release()
	p.slab = nil
}

// eachBuffer calls f with every buffer of d, its children's and its dictionary's.
func eachBuffer(d arrow.ArrayData, f func(*memory.Buffer)) {
	for _, buf := range d.Buffers() {
		if buf != nil {
			f(buf)
		}
	}
	for _, c := range d.Children() {
		eachBuffer(c, f)
	}
	// Dictionary is a nil *array.Data, not a nil interface, without a dictionary.
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		eachBuffer(dict, f)
	}
}
