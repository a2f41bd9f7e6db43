package exec

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// EXPLAIN ANALYZE
//
// Operators are immutable and their children are fixed when they are built, so a finished tree
// cannot be rewrapped from the outside. Instead the physical planner calls Instrument on every
// node as it builds it, before handing it to its parent: each node of the tree is then an
// *Analyzed wrapping the real operator, whose children are themselves *Analyzed. Analyzed is
// transparent (same schema, partitions, children and String) and counts what flows out of it.
// FormatAnalyzedPlan prints the tree with each node's metrics; a node that was not instrumented
// prints without them.

// Analyzed wraps an operator and measures its output across all partitions and executions.
type Analyzed struct {
	op      Operator
	metrics *OperatorMetrics
}

// OperatorMetrics are the counters of one instrumented operator. They are updated atomically,
// so partitions executing concurrently can share them.
type OperatorMetrics struct {
	rows, batches, bytes, nanos atomic.Int64
	spilled                     atomic.Int64
}

// MetricsSnapshot is a point-in-time copy of OperatorMetrics.
type MetricsSnapshot struct {
	// Rows and Batches count the batches the operator yielded and their rows.
	Rows, Batches int64
	// Bytes is the sum of the sizes of the buffers of the yielded batches.
	Bytes int64
	// Elapsed is the time spent inside the operator's Execute and its readers' Next calls,
	// summed over partitions; it includes the time of its children (inclusive), and for
	// operators that wait on concurrent producers (Coalesce, Repartition) the waiting.
	Elapsed time.Duration
	// Spilled is the bytes the operator wrote to spill files (sort, hash aggregate, hash join
	// under a memory limit).
	Spilled int64
}

// Instrument wraps op so that its output is measured. Instrumenting an *Analyzed returns it
// unchanged.
func Instrument(op Operator) Operator {
	if a, ok := op.(*Analyzed); ok {
		return a
	}
	return &Analyzed{op: op, metrics: &OperatorMetrics{}}
}

// Unwrap returns the instrumented operator.
func (a *Analyzed) Unwrap() Operator { return a.op }

// Metrics returns a snapshot of the counters.
func (a *Analyzed) Metrics() MetricsSnapshot {
	return MetricsSnapshot{
		Rows:    a.metrics.rows.Load(),
		Batches: a.metrics.batches.Load(),
		Bytes:   a.metrics.bytes.Load(),
		Elapsed: time.Duration(a.metrics.nanos.Load()),
		Spilled: a.metrics.spilled.Load(),
	}
}

func (a *Analyzed) Schema() *arrow.Schema { return a.op.Schema() }
func (a *Analyzed) Children() []Operator  { return a.op.Children() }
func (a *Analyzed) Partitions() int       { return a.op.Partitions() }
func (a *Analyzed) String() string        { return a.op.String() }

func (a *Analyzed) Execute(ctx context.Context, partition int, tc *TaskContext) (array.RecordReader, error) {
	start := time.Now()
	ctx = context.WithValue(ctx, spillCounterKey{}, &a.metrics.spilled)
	rdr, err := a.op.Execute(ctx, partition, tc)
	a.metrics.nanos.Add(int64(time.Since(start)))
	if err != nil {
		return nil, err
	}
	return &analyzedReader{RecordReader: rdr, m: a.metrics}, nil
}

// analyzedReader counts the batches a reader yields and the time its Next calls take.
type analyzedReader struct {
	array.RecordReader
	m *OperatorMetrics
}

func (r *analyzedReader) Next() bool {
	start := time.Now()
	ok := r.RecordReader.Next()
	r.m.nanos.Add(int64(time.Since(start)))
	if ok {
		b := r.RecordReader.RecordBatch()
		r.m.batches.Add(1)
		r.m.rows.Add(b.NumRows())
		r.m.bytes.Add(batchBytes(b))
	}
	return ok
}

// batchBytes is what b's rows take in its columns: for fixed-width, string and binary columns the
// bytes of b's rows only (a slice of a large array counts its rows, not the whole array), for
// other columns every buffer they reference (children and dictionaries included), in full.
func batchBytes(b arrow.RecordBatch) int64 {
	var n int64
	for _, c := range b.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	rows := int64(d.Len())
	bufs := d.Buffers()
	var validity int64
	if len(bufs) > 0 && bufs[0] != nil {
		validity = (rows + 7) / 8
	}
	switch t := d.DataType().(type) {
	case *arrow.DictionaryType: // fixed-width indices, but its dictionary counts too: below
	case arrow.FixedWidthDataType:
		return validity + (int64(t.BitWidth())*rows+7)/8
	case *arrow.StringType, *arrow.BinaryType:
		if len(bufs) < 2 || bufs[1] == nil || rows == 0 {
			break
		}
		offsets := arrow.Int32Traits.CastFromBytes(bufs[1].Bytes())
		if len(offsets) < d.Offset()+d.Len()+1 {
			break
		}
		return validity + 4*(rows+1) + int64(offsets[d.Offset()+d.Len()]-offsets[d.Offset()])
	}
	var n int64
	for _, buf := range bufs {
		if buf != nil {
			n += int64(buf.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		n += dataBytes(d.Dictionary())
	}
	return n
}

// FormatAnalyzedPart renders one process's part of a distributed execution like
// FormatAnalyzedPlan, except that an instrumented operator this process never ran (no output,
// no time: it ran on another process of the execution) ends with "  (not run here)".
func FormatAnalyzedPart(op Operator) string {
	var b strings.Builder
	writePlan(&b, op, 0, func(o Operator) string {
		if a, ok := o.(*Analyzed); ok {
			if m := a.Metrics(); m.Batches == 0 && m.Elapsed == 0 {
				return "  (not run here)"
			}
		}
		return analyzedMetrics(o)
	})
	return b.String()
}

// FormatAnalyzedPlan renders the tree like FormatPlan, appending to each instrumented node's
// line "  rows=R batches=B bytes=N time=T" (and " spilled=S" when it wrote spill files).
func FormatAnalyzedPlan(op Operator) string {
	var b strings.Builder
	writePlan(&b, op, 0, analyzedMetrics)
	return b.String()
}

// analyzedMetrics is the end of an instrumented operator's line: its metrics ("" for an
// operator that is not instrumented).
func analyzedMetrics(o Operator) string {
	a, ok := o.(*Analyzed)
	if !ok {
		return ""
	}
	m := a.Metrics()
	line := fmt.Sprintf("  rows=%d batches=%d bytes=%d time=%s", m.Rows, m.Batches, m.Bytes, m.Elapsed.Round(time.Microsecond))
	if m.Spilled > 0 {
		line += fmt.Sprintf(" spilled=%d", m.Spilled)
	}
	if scan, ok := a.Unwrap().(*Scan); ok {
		if fetched := scan.Fetched(); fetched != "" {
			line += " " + fetched
		}
	}
	return line
}
