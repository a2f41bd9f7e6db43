package iceberg

import (
	"context"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/cachedb/cachedb/catalog"
)

var _ catalog.StatisticsTable = (*Table)(nil)

// thetaSketchBlob is the Puffin blob type whose metadata carries a column's distinct count
// ("ndv"), as Spark and Trino write it.
const thetaSketchBlob = "apache-datasketches-theta-v1"

// Statistics implements catalog.StatisticsTable for the pinned snapshot, from metadata only:
// the data files' record counts (less the rows of position delete files), null counts and
// lower and upper bounds from the manifests, and distinct counts from the Puffin statistics
// the table metadata lists (their "ndv" property, for the pinned snapshot or its nearest
// ancestor that has some), else the largest distinct count a data file reports. Equality
// deletes are not subtracted. The manifest summary is computed once per snapshot and
// remembered by the catalog (snapshots are immutable).
func (t *Table) Statistics(ctx context.Context) (catalog.Statistics, error) {
	fields := t.pin.schema.Fields()
	if t.pin.snap == nil {
		cols := make([]catalog.ColumnStatistics, len(fields))
		for i := range cols {
			cols[i] = catalog.ColumnStatistics{Distinct: 0, Nulls: 0}
		}
		return catalog.Statistics{Rows: 0, Columns: cols}, nil
	}
	key := t.tbl.MetadataLocation() + "#" + strconv.FormatInt(t.pin.snap.SnapshotID, 10)
	sum, ok := t.cat.statsCache.get(key)
	if !ok {
		var err error
		if sum, err = t.summarizeFiles(ctx); err != nil {
			return catalog.Statistics{}, err
		}
		t.cat.statsCache.put(key, sum)
	}
	ndv := puffinDistinct(t.tbl.Metadata(), t.pin.snap)
	out := catalog.Statistics{Rows: sum.rows, Columns: make([]catalog.ColumnStatistics, len(fields))}
	for i, f := range fields {
		cs := catalog.UnknownColumn
		fs, ok := sum.fields[f.ID]
		if ok {
			cs.Nulls = fs.nulls
			cs.Distinct = fs.distinct
			if fs.bounded && fs.lower != nil && fs.upper != nil {
				cs.Min = boundScalar(fs.lower, t.schema.Field(i).Type)
				cs.Max = boundScalar(fs.upper, t.schema.Field(i).Type)
				if cs.Min == nil || cs.Max == nil {
					cs.Min, cs.Max = nil, nil
				}
			}
		}
		if n, ok := ndv[f.ID]; ok {
			cs.Distinct = n
		}
		out.Columns[i] = cs
	}
	return out, nil
}

// fileSummary is the per-snapshot summary of the data files' metadata, by field id.
type fileSummary struct {
	rows   int64
	fields map[int]*fieldSummary
}

type fieldSummary struct {
	nulls    int64 // -1 when some file lacks the count
	distinct int64 // the largest per-file distinct count, -1 when no file has one
	// lower and upper are the least lower and the greatest upper bound; bounded is false when
	// some file holding non-null values lacks a bound.
	lower, upper iceberg.Literal
	bounded      bool
}

// summarizeFiles plans the whole pinned snapshot (manifests only) and folds its files'
// metadata together.
func (t *Table) summarizeFiles(ctx context.Context) (*fileSummary, error) {
	scan, err := t.newScan(t.tbl)
	if err != nil {
		return nil, t.planErr(err)
	}
	tasks, err := scan.PlanFiles(ctx)
	_ = scan.Close()
	if err != nil {
		return nil, t.planErr(err)
	}
	sum := &fileSummary{fields: map[int]*fieldSummary{}}
	types := map[int]iceberg.Type{}
	for _, f := range t.pin.schema.Fields() {
		types[f.ID] = f.Type
		sum.fields[f.ID] = &fieldSummary{distinct: -1, bounded: true}
	}
	seen := map[string]bool{}
	for _, task := range tasks {
		for _, del := range task.DeleteFiles {
			if seen[del.FilePath()] {
				continue
			}
			seen[del.FilePath()] = true
			if del.ContentType() == iceberg.EntryContentPosDeletes {
				sum.rows -= del.Count()
			}
		}
		f := task.File
		if seen[f.FilePath()] {
			continue // a file split into several tasks
		}
		seen[f.FilePath()] = true
		sum.rows += f.Count()
		nulls, distinct := f.NullValueCounts(), f.DistinctValueCounts()
		lower, upper := f.LowerBoundValues(), f.UpperBoundValues()
		for id, fs := range sum.fields {
			n, hasNulls := nulls[id]
			if !hasNulls {
				fs.nulls = -1
			} else if fs.nulls >= 0 {
				fs.nulls += n
			}
			if d, ok := distinct[id]; ok && d > fs.distinct {
				fs.distinct = d
			}
			if !fs.bounded || (hasNulls && n == f.Count()) {
				continue // nothing to bound, or already unbounded
			}
			lo, okLo := decodeBound(types[id], lower[id])
			hi, okHi := decodeBound(types[id], upper[id])
			if !okLo || !okHi {
				fs.bounded, fs.lower, fs.upper = false, nil, nil
				continue
			}
			if fs.lower == nil || literalLess(lo, fs.lower) {
				fs.lower = lo
			}
			if fs.upper == nil || literalLess(fs.upper, hi) {
				fs.upper = hi
			}
		}
	}
	sum.rows = max(sum.rows, 0)
	return sum, nil
}

// decodeBound reads an Iceberg single-value serialization of a primitive bound.
func decodeBound(typ iceberg.Type, data []byte) (iceberg.Literal, bool) {
	if data == nil {
		return nil, false
	}
	if _, ok := typ.(iceberg.PrimitiveType); !ok {
		return nil, false
	}
	lit, err := iceberg.LiteralFromBytes(typ, data)
	return lit, err == nil
}

// literalLess compares two bounds of one column; literals it cannot order compare as equal.
func literalLess(a, b iceberg.Literal) bool {
	switch a := a.(type) {
	case iceberg.Int32Literal:
		b, ok := b.(iceberg.Int32Literal)
		return ok && a < b
	case iceberg.Int64Literal:
		b, ok := b.(iceberg.Int64Literal)
		return ok && a < b
	case iceberg.Float32Literal:
		b, ok := b.(iceberg.Float32Literal)
		return ok && a < b
	case iceberg.Float64Literal:
		b, ok := b.(iceberg.Float64Literal)
		return ok && a < b
	case iceberg.DateLiteral:
		b, ok := b.(iceberg.DateLiteral)
		return ok && a < b
	case iceberg.TimestampLiteral:
		b, ok := b.(iceberg.TimestampLiteral)
		return ok && a < b
	case iceberg.TimestampNsLiteral:
		b, ok := b.(iceberg.TimestampNsLiteral)
		return ok && a < b
	case iceberg.StringLiteral:
		b, ok := b.(iceberg.StringLiteral)
		return ok && a < b
	case iceberg.DecimalLiteral:
		b, ok := b.(iceberg.DecimalLiteral)
		return ok && a.Comparator()(iceberg.Decimal(a), iceberg.Decimal(b)) < 0
	}
	return false
}

// boundScalar converts a bound to a scalar of the column's Arrow type, nil for types whose
// bounds the optimizer does not use.
func boundScalar(lit iceberg.Literal, dt arrow.DataType) scalar.Scalar {
	switch l := lit.(type) {
	case iceberg.Int32Literal:
		switch dt.ID() {
		case arrow.INT32:
			return scalar.NewInt32Scalar(int32(l))
		case arrow.INT64:
			return scalar.NewInt64Scalar(int64(l))
		}
	case iceberg.Int64Literal:
		if dt.ID() == arrow.INT64 {
			return scalar.NewInt64Scalar(int64(l))
		}
	case iceberg.Float32Literal:
		if dt.ID() == arrow.FLOAT32 {
			return scalar.NewFloat32Scalar(float32(l))
		}
	case iceberg.Float64Literal:
		if dt.ID() == arrow.FLOAT64 && !math.IsNaN(float64(l)) {
			return scalar.NewFloat64Scalar(float64(l))
		}
	case iceberg.DateLiteral:
		if dt.ID() == arrow.DATE32 {
			return scalar.NewDate32Scalar(arrow.Date32(l))
		}
	case iceberg.TimestampLiteral:
		if ts, ok := dt.(*arrow.TimestampType); ok && ts.Unit == arrow.Microsecond {
			return scalar.NewTimestampScalar(arrow.Timestamp(l), ts)
		}
	case iceberg.TimestampNsLiteral:
		if ts, ok := dt.(*arrow.TimestampType); ok && ts.Unit == arrow.Nanosecond {
			return scalar.NewTimestampScalar(arrow.Timestamp(l), ts)
		}
	case iceberg.DecimalLiteral:
		if d, ok := dt.(*arrow.Decimal128Type); ok && d.Scale == int32(l.Scale) {
			return scalar.NewDecimal128Scalar(decimal128.Num(l.Val), d)
		}
	case iceberg.StringLiteral:
		if dt.ID() == arrow.STRING {
			return scalar.NewStringScalar(string(l))
		}
	}
	return nil
}

// puffinDistinct reads the distinct counts that the table metadata's statistics files record
// for snap, or else for its nearest ancestor that has a statistics file: field id → ndv.
func puffinDistinct(meta table.Metadata, snap *table.Snapshot) map[int]int64 {
	files := map[int64]table.StatisticsFile{}
	for f := range meta.Statistics() {
		files[f.SnapshotID] = f
	}
	if len(files) == 0 {
		return nil
	}
	var chosen *table.StatisticsFile
	if f, ok := files[snap.SnapshotID]; ok {
		chosen = &f
	} else {
		for _, s := range table.AncestorsOf(snap.SnapshotID, meta.SnapshotByID) {
			if f, ok := files[s.SnapshotID]; ok {
				chosen = &f
				break
			}
		}
	}
	if chosen == nil {
		return nil
	}
	out := map[int]int64{}
	for _, blob := range chosen.BlobMetadata {
		if string(blob.Type) != thetaSketchBlob || len(blob.Fields) != 1 {
			continue
		}
		if n, err := strconv.ParseInt(blob.Properties["ndv"], 10, 64); err == nil && n >= 0 {
			out[int(blob.Fields[0])] = n
		}
	}
	return out
}
