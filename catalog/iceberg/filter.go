package iceberg

import (
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"

	"github.com/cachedb/cachedb/catalog"
)

// icebergFilter translates a catalog.Filter into an Iceberg row filter over the columns of
// schema (the pinned snapshot's). The result must hold for every row the filter keeps, because
// iceberg-go uses it to skip manifests, files and row groups and also applies it to the rows it
// reads. So a predicate is translated only when its Iceberg form keeps exactly the rows the
// engine's comparison keeps — constants are converted to the column's type, and one that falls
// between two column values turns `<`/`<=` into `<=` the value below and `>`/`>=` into `>=` the
// value above — and otherwise it is dropped. Dropping a predicate from an OR would tighten it,
// so an untranslatable predicate drops its whole disjunction. The second result counts the
// predicates translated.
//
// forRead builds the filter for reading rather than planning: each predicate on an optional
// column also admits NULLs (`p OR col IS NULL`, and `col IS NOT NULL` is left out). iceberg-go
// v0.7.0 prunes Parquet row groups by comparing the statistics' non-null value count with the
// null count, so it drops a row group whose column holds as many NULLs as values as if it were
// all NULL — rows matching the filter included. A row group with NULLs always "might contain" a
// NULL, so the guard keeps such row groups; row groups without NULLs are still pruned by their
// min/max, and planning (which uses manifest value counts, NULLs included) is unaffected. The
// extra NULL rows are removed by the engine, which applies the whole filter anyway.
func icebergFilter(f catalog.Filter, schema *iceberg.Schema, forRead bool) (iceberg.BooleanExpression, int) {
	fields := schema.Fields()
	var conj []iceberg.BooleanExpression
	n := 0
	for _, d := range f {
		var ors []iceberg.BooleanExpression
		ok := len(d) > 0
		for _, p := range d {
			e, good := predicate(p, fields)
			if !good {
				ok = false
				break
			}
			if forRead {
				if e, good = readPredicate(e, p, fields[p.Column]); !good {
					ok = false
					break
				}
			}
			ors = append(ors, e)
		}
		if !ok {
			continue
		}
		n += len(ors)
		conj = append(conj, orAll(ors))
	}
	switch len(conj) {
	case 0:
		return iceberg.AlwaysTrue{}, 0
	case 1:
		return conj[0], n
	default:
		return iceberg.NewAnd(conj[0], conj[1], conj[2:]...), n
	}
}

// readPredicate adapts a translated predicate for reading (see icebergFilter): on an optional
// column it also admits NULLs. Decimal columns get no null tests at all, since iceberg-go's
// row filter evaluates `IS NULL` on decimal128 through an arrow-go kernel that panics (v18.8.0,
// in a goroutine nobody can recover); so a predicate on an optional decimal column, which
// would need the guard, is left to planning and the engine.
func readPredicate(e iceberg.BooleanExpression, p catalog.Predicate, f iceberg.NestedField) (iceberg.BooleanExpression, bool) {
	_, decimal := f.Type.(iceberg.DecimalType)
	nullTest := p.Op == catalog.OpIsNull || p.Op == catalog.OpIsNotNull
	switch {
	case decimal && (nullTest || !f.Required):
		return nil, false
	case f.Required || p.Op == catalog.OpIsNull:
		return e, true
	case p.Op == catalog.OpIsNotNull:
		return nil, false // guarded, it would always hold
	}
	return iceberg.NewOr(e, iceberg.IsNull(iceberg.Reference(f.Name))), true
}

func orAll(es []iceberg.BooleanExpression) iceberg.BooleanExpression {
	if len(es) == 1 {
		return es[0]
	}
	return iceberg.NewOr(es[0], es[1], es[2:]...)
}

func predicate(p catalog.Predicate, fields []iceberg.NestedField) (iceberg.BooleanExpression, bool) {
	tp, ok := translate(p, fields)
	if !ok {
		return nil, false
	}
	ref := iceberg.Reference(tp.field.Name)
	switch tp.op {
	case iceberg.OpIsNull:
		return iceberg.IsNull(ref), true
	case iceberg.OpNotNull:
		return iceberg.NotNull(ref), true
	case iceberg.OpIn:
		return iceberg.SetPredicate(iceberg.OpIn, ref, tp.lits), true
	}
	return iceberg.LiteralPredicate(tp.op, ref, tp.lits[0]), true
}

// translated is a predicate in the column's own terms: the column, the Iceberg operation
// (OpIsNull, OpNotNull, OpIn with two or more literals, or a comparison with one) and the
// constants converted to the column's type. Planning builds Iceberg expressions from it and
// row-group pruning compares it with Parquet statistics, so both follow one set of rules.
type translated struct {
	field iceberg.NestedField
	op    iceberg.Operation
	lits  []iceberg.Literal
}

// translate converts p (see icebergFilter for the rules); ok is false when it cannot be
// expressed exactly.
func translate(p catalog.Predicate, fields []iceberg.NestedField) (translated, bool) {
	if p.Column < 0 || p.Column >= len(fields) {
		return translated{}, false
	}
	f := fields[p.Column]
	if strings.Contains(f.Name, ".") {
		// A reference with a dot would be read as a path into a struct.
		return translated{}, false
	}
	if _, ok := f.Type.(iceberg.PrimitiveType); !ok {
		return translated{}, false
	}
	if _, ok := f.Type.(iceberg.BooleanType); ok {
		// Booleans have no ordering kernels in arrow-go's compute: iceberg-go fails to read
		// with `b < true` as a row filter.
		switch p.Op {
		case catalog.OpEq, catalog.OpNotEq, catalog.OpIn, catalog.OpIsNull, catalog.OpIsNotNull:
		default:
			return translated{}, false
		}
	}
	out := translated{field: f}
	switch p.Op {
	case catalog.OpIsNull:
		out.op = iceberg.OpIsNull
		return out, true
	case catalog.OpIsNotNull:
		out.op = iceberg.OpNotNull
		return out, true
	case catalog.OpIn:
		for _, v := range p.Values {
			b, ok := bounds(v, f.Type)
			if !ok {
				return translated{}, false
			}
			if b.exact {
				out.lits = append(out.lits, b.lo)
			}
			// A constant between two column values equals no value of the column.
		}
		switch len(out.lits) {
		case 0:
			return translated{}, false
		case 1:
			out.op = iceberg.OpEQ
		default:
			out.op = iceberg.OpIn
		}
		return out, true
	}
	if len(p.Values) != 1 {
		return translated{}, false
	}
	b, ok := bounds(p.Values[0], f.Type)
	if !ok {
		return translated{}, false
	}
	switch p.Op {
	case catalog.OpEq:
		out.op = iceberg.OpEQ
	case catalog.OpNotEq:
		out.op = iceberg.OpNEQ
	case catalog.OpLt:
		out.op = iceberg.OpLT
	case catalog.OpLtEq:
		out.op = iceberg.OpLTEQ
	case catalog.OpGt:
		out.op = iceberg.OpGT
	case catalog.OpGtEq:
		out.op = iceberg.OpGTEQ
	default:
		return translated{}, false
	}
	if b.exact {
		out.lits = []iceberg.Literal{b.lo}
		return out, true
	}
	switch out.op {
	case iceberg.OpLT, iceberg.OpLTEQ:
		if b.lo != nil {
			out.op, out.lits = iceberg.OpLTEQ, []iceberg.Literal{b.lo}
			return out, true
		}
	case iceberg.OpGT, iceberg.OpGTEQ:
		if b.hi != nil {
			out.op, out.lits = iceberg.OpGTEQ, []iceberg.Literal{b.hi}
			return out, true
		}
	}
	// = of a value no column value equals, or <> of one: nothing to skip safely by.
	return translated{}, false
}

// bound is a constant placed in a column's domain: exact (lo is the constant) or strictly
// between the column values lo and hi (either nil when out of the column's range).
type bound struct {
	exact  bool
	lo, hi iceberg.Literal
}

// bounds converts v to the column type t the way the engine compares them (see
// exec.comparisonType): strings with strings; exact numbers with exact numbers exactly; floats
// with any number as float64; temporal values with temporal values or strings in the temporal
// type. ok is false when the pair is not one of those or the conversion is not certain.
func bounds(v scalar.Scalar, t iceberg.Type) (bound, bool) {
	if v == nil || !v.IsValid() {
		return bound{}, false
	}
	switch t := t.(type) {
	case iceberg.BooleanType:
		if b, ok := v.(*scalar.Boolean); ok {
			return bound{exact: true, lo: iceberg.NewLiteral(b.Value)}, true
		}
	case iceberg.StringType:
		if s, ok := stringValue(v); ok {
			return bound{exact: true, lo: iceberg.NewLiteral(s)}, true
		}
	case iceberg.Int32Type:
		if r, ok := exactOrFloatNumber(v); ok {
			return intBounds(r, math.MinInt32, math.MaxInt32, func(x int64) iceberg.Literal { return iceberg.NewLiteral(int32(x)) })
		}
	case iceberg.Int64Type:
		if r, ok := exactOrFloatNumber(v); ok {
			return intBounds(r, math.MinInt64, math.MaxInt64, func(x int64) iceberg.Literal { return iceberg.NewLiteral(x) })
		}
	case iceberg.Float64Type:
		if f, ok := floatNumber(v); ok {
			return bound{exact: true, lo: iceberg.NewLiteral(f)}, true
		}
	case iceberg.Float32Type:
		if f, ok := floatNumber(v); ok {
			return float32Bounds(f), true
		}
	case iceberg.DecimalType:
		if r, ok := exactNumber(v); ok {
			return decimalBounds(r, t.Precision(), t.Scale())
		}
	case iceberg.DateType:
		if r, ok := temporalValue(v, dayNanos, true); ok {
			return intBounds(r, math.MinInt32, math.MaxInt32, func(x int64) iceberg.Literal { return iceberg.NewLiteral(iceberg.Date(x)) })
		}
	case iceberg.TimeType:
		if r, ok := timeOfDay(v); ok {
			return intBounds(r, 0, 86400*1_000_000-1, func(x int64) iceberg.Literal { return iceberg.NewLiteral(iceberg.Time(x)) })
		}
	case iceberg.TimestampType, iceberg.TimestampTzType:
		if r, ok := temporalValue(v, 1000, false); ok {
			return intBounds(r, math.MinInt64, math.MaxInt64, func(x int64) iceberg.Literal { return iceberg.NewLiteral(iceberg.Timestamp(x)) })
		}
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		if r, ok := temporalValue(v, 1, false); ok {
			return intBounds(r, math.MinInt64, math.MaxInt64, func(x int64) iceberg.Literal { return iceberg.NewLiteral(iceberg.TimestampNano(x)) })
		}
	}
	return bound{}, false
}

func stringValue(v scalar.Scalar) (string, bool) {
	switch s := v.(type) {
	case *scalar.String:
		return string(s.Data()), true
	case *scalar.LargeString:
		return string(s.Data()), true
	}
	return "", false
}

// exactNumber is an integer or decimal constant as an exact rational.
func exactNumber(v scalar.Scalar) (*big.Rat, bool) {
	switch s := v.(type) {
	case *scalar.Int8:
		return new(big.Rat).SetInt64(int64(s.Value)), true
	case *scalar.Int16:
		return new(big.Rat).SetInt64(int64(s.Value)), true
	case *scalar.Int32:
		return new(big.Rat).SetInt64(int64(s.Value)), true
	case *scalar.Int64:
		return new(big.Rat).SetInt64(s.Value), true
	case *scalar.Uint8:
		return new(big.Rat).SetUint64(uint64(s.Value)), true
	case *scalar.Uint16:
		return new(big.Rat).SetUint64(uint64(s.Value)), true
	case *scalar.Uint32:
		return new(big.Rat).SetUint64(uint64(s.Value)), true
	case *scalar.Uint64:
		return new(big.Rat).SetUint64(s.Value), true
	case *scalar.Decimal128:
		scale := s.Type.(*arrow.Decimal128Type).Scale
		return decimalRat(s.Value.BigInt(), scale), true
	case *scalar.Decimal256:
		scale := s.Type.(*arrow.Decimal256Type).Scale
		return decimalRat(s.Value.BigInt(), scale), true
	}
	return nil, false
}

func decimalRat(unscaled *big.Int, scale int32) *big.Rat {
	r := new(big.Rat).SetInt(unscaled)
	if scale > 0 {
		r.Quo(r, new(big.Rat).SetInt(pow10(int(scale))))
	} else if scale < 0 {
		r.Mul(r, new(big.Rat).SetInt(pow10(int(-scale))))
	}
	return r
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// maxExactFloat bounds the floats compared with integer columns: beyond 2^53 the engine's
// float64 comparison rounds column values, so `=` and the rounded bounds would no longer agree.
const maxExactFloat = 1 << 53

// exactOrFloatNumber is exactNumber, or a float constant the engine compares with an integer
// column as float64, when that comparison agrees with an exact one.
func exactOrFloatNumber(v scalar.Scalar) (*big.Rat, bool) {
	if r, ok := exactNumber(v); ok {
		return r, true
	}
	var f float64
	switch s := v.(type) {
	case *scalar.Float32:
		f = float64(s.Value)
	case *scalar.Float64:
		f = s.Value
	default:
		return nil, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= maxExactFloat {
		return nil, false
	}
	return new(big.Rat).SetFloat64(f), true
}

// floatNumber is a numeric constant as the float64 the engine compares a float column with.
func floatNumber(v scalar.Scalar) (float64, bool) {
	var f float64
	switch s := v.(type) {
	case *scalar.Float32:
		f = float64(s.Value)
	case *scalar.Float64:
		f = s.Value
	case *scalar.Float16:
		f = float64(s.Value.Float32())
	default:
		r, ok := exactNumber(v)
		if !ok {
			return 0, false
		}
		f, _ = r.Float64()
	}
	if math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// float32Bounds places f among the float32 values (compared as float64, as the engine does).
func float32Bounds(f float64) bound {
	g := float32(f)
	if float64(g) == f {
		return bound{exact: true, lo: iceberg.NewLiteral(g)}
	}
	var lo, hi float32
	if float64(g) < f {
		lo, hi = g, math.Nextafter32(g, float32(math.Inf(1)))
	} else {
		lo, hi = math.Nextafter32(g, float32(math.Inf(-1))), g
	}
	return bound{lo: iceberg.NewLiteral(lo), hi: iceberg.NewLiteral(hi)}
}

// intBounds places r among the integers [min, max] of a column domain.
func intBounds(r *big.Rat, min, max int64, lit func(int64) iceberg.Literal) (bound, bool) {
	floor, ceil := floorCeil(r)
	inRange := func(x *big.Int) bool { return x.IsInt64() && x.Int64() >= min && x.Int64() <= max }
	if floor.Cmp(ceil) == 0 {
		if !inRange(floor) {
			return bound{}, false
		}
		return bound{exact: true, lo: lit(floor.Int64())}, true
	}
	var b bound
	if inRange(floor) {
		b.lo = lit(floor.Int64())
	}
	if inRange(ceil) {
		b.hi = lit(ceil.Int64())
	}
	if b.lo == nil && b.hi == nil {
		return bound{}, false
	}
	return b, true
}

func floorCeil(r *big.Rat) (floor, ceil *big.Int) {
	num, den := r.Num(), r.Denom()
	q, m := new(big.Int).DivMod(num, den, new(big.Int)) // Euclidean: m >= 0, so q is the floor
	if m.Sign() == 0 {
		return q, q
	}
	return q, new(big.Int).Add(q, big.NewInt(1))
}

// decimalBounds places r among the values of decimal(precision, scale).
func decimalBounds(r *big.Rat, precision, scale int) (bound, bool) {
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(pow10(scale)))
	floor, ceil := floorCeil(scaled)
	limit := pow10(precision)
	fits := func(x *big.Int) bool { return new(big.Int).Abs(x).Cmp(limit) < 0 }
	lit := func(x *big.Int) iceberg.Literal {
		return iceberg.NewLiteral(iceberg.Decimal{Val: decimal128.FromBigInt(x), Scale: scale})
	}
	if floor.Cmp(ceil) == 0 {
		if !fits(floor) {
			return bound{}, false
		}
		return bound{exact: true, lo: lit(floor)}, true
	}
	var b bound
	if fits(floor) {
		b.lo = lit(floor)
	}
	if fits(ceil) {
		b.hi = lit(ceil)
	}
	if b.lo == nil && b.hi == nil {
		return bound{}, false
	}
	return b, true
}

const dayNanos = 86400 * 1_000_000_000

// temporalValue is a date, timestamp or string constant as a rational count of column units
// since the epoch, a unit being unitNanos nanoseconds. Strings are read as the engine casts
// them to the column type: a date column takes "YYYY-MM-DD" only (anything longer is left to
// the engine); a timestamp column takes a date, or a date and time, without a zone, as UTC.
func temporalValue(v scalar.Scalar, unitNanos int64, dateColumn bool) (*big.Rat, bool) {
	var nanos *big.Int
	switch s := v.(type) {
	case *scalar.Date32:
		nanos = new(big.Int).Mul(big.NewInt(int64(s.Value)), big.NewInt(dayNanos))
	case *scalar.Date64:
		nanos = new(big.Int).Mul(big.NewInt(int64(s.Value)), big.NewInt(1_000_000))
	case *scalar.Timestamp:
		unit := s.Type.(*arrow.TimestampType).Unit
		nanos = new(big.Int).Mul(big.NewInt(int64(s.Value)), big.NewInt(int64(unit.Multiplier())))
	default:
		str, ok := stringValue(v)
		if !ok {
			return nil, false
		}
		str = strings.TrimSpace(str)
		layouts := []string{"2006-01-02"}
		if !dateColumn {
			layouts = append(layouts, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999")
		}
		var (
			ts    time.Time
			found bool
		)
		for _, l := range layouts {
			if t, err := time.Parse(l, str); err == nil {
				ts, found = t, true
				break
			}
		}
		if !found {
			return nil, false
		}
		nanos = new(big.Int).Mul(big.NewInt(ts.Unix()), big.NewInt(1_000_000_000))
		nanos.Add(nanos, big.NewInt(int64(ts.Nanosecond())))
	}
	return new(big.Rat).SetFrac(nanos, big.NewInt(unitNanos)), true
}

// timeOfDay is a time constant in microseconds since midnight.
func timeOfDay(v scalar.Scalar) (*big.Rat, bool) {
	switch s := v.(type) {
	case *scalar.Time32:
		unit := s.Type.(*arrow.Time32Type).Unit
		return new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(int64(s.Value)), big.NewInt(int64(unit.Multiplier()))), big.NewInt(1000)), true
	case *scalar.Time64:
		unit := s.Type.(*arrow.Time64Type).Unit
		return new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(int64(s.Value)), big.NewInt(int64(unit.Multiplier()))), big.NewInt(1000)), true
	}
	str, ok := stringValue(v)
	if !ok {
		return nil, false
	}
	t, err := time.Parse("15:04:05.999999999", strings.TrimSpace(str))
	if err != nil {
		return nil, false
	}
	ns := int64(t.Hour())*3600e9 + int64(t.Minute())*60e9 + int64(t.Second())*1e9 + int64(t.Nanosecond())
	return new(big.Rat).SetFrac(big.NewInt(ns), big.NewInt(1000)), true
}
