package iceberg

import (
	"math"
	"math/big"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"

	"github.com/cachedb/cachedb/catalog"
)

type row []any

func (r row) Size() int        { return len(r) }
func (r row) Get(i int) any    { return r[i] }
func (r row) Set(i int, v any) { r[i] = v }
func cmpRat(a, b *big.Rat) int { return a.Cmp(b) }
func ratInt(i int64) *big.Rat  { return new(big.Rat).SetInt64(i) }
func decScalar(unscaled int64, p, s int32) scalar.Scalar {
	return scalar.NewDecimal128Scalar(decimal128.FromI64(unscaled), &arrow.Decimal128Type{Precision: p, Scale: s})
}

// holds applies op to a comparison result.
func holds(op catalog.CompareOp, c int) bool {
	switch op {
	case catalog.OpEq, catalog.OpIn:
		return c == 0
	case catalog.OpNotEq:
		return c != 0
	case catalog.OpLt:
		return c < 0
	case catalog.OpLtEq:
		return c <= 0
	case catalog.OpGt:
		return c > 0
	case catalog.OpGtEq:
		return c >= 0
	}
	panic(op)
}

// TestFilterMatchesEngine checks, value by value, that every translated predicate keeps
// exactly the column values the engine's comparison keeps (see exec.comparisonType): numbers
// exactly, floats as float64, temporal values in their common unit.
func TestFilterMatchesEngine(t *testing.T) {
	ops := []catalog.CompareOp{catalog.OpEq, catalog.OpNotEq, catalog.OpLt, catalog.OpLtEq, catalog.OpGt, catalog.OpGtEq, catalog.OpIn}
	type column struct {
		typ    iceberg.Type
		values []any                   // iceberg representations
		key    func(v any) *big.Rat    // the engine's view of a column value, for exact types
		fkey   func(v any) float64     // the engine's view, for comparisons done as float64
		lits   []scalar.Scalar         // constants to compare with
		litKey func(scalar.Scalar) any // *big.Rat or float64, the engine's view of a constant
	}
	exactLit := func(s scalar.Scalar) any {
		if r, ok := exactNumber(s); ok {
			return r
		}
		switch v := s.(type) {
		case *scalar.Float64:
			return v.Value
		case *scalar.Float32:
			return float64(v.Value)
		}
		return nil
	}
	numLits := []scalar.Scalar{
		scalar.NewInt64Scalar(5), scalar.NewInt64Scalar(-3), scalar.NewInt32Scalar(7), scalar.NewUint64Scalar(math.MaxUint64),
		scalar.NewInt64Scalar(math.MaxInt64), scalar.NewInt64Scalar(1 << 40),
		scalar.NewFloat64Scalar(5.5), scalar.NewFloat64Scalar(-2.5), scalar.NewFloat64Scalar(7), scalar.NewFloat64Scalar(1e300),
		scalar.NewFloat32Scalar(0.1), scalar.NewFloat64Scalar(1 << 53), decScalar(550, 10, 2), decScalar(700, 10, 2), decScalar(-1, 5, 3),
	}
	int32s := []any{int32(-3), int32(-2), int32(0), int32(5), int32(6), int32(7), int32(math.MaxInt32), int32(math.MinInt32)}
	int64s := []any{int64(-3), int64(5), int64(6), int64(7), int64(1 << 40), int64(1<<53 + 1), int64(math.MaxInt64), int64(math.MinInt64)}
	f32s := []any{float32(0.1), float32(0.099999994), float32(0.10000001), float32(5.5), float32(7), float32(-2.5), float32(math.MaxFloat32), float32(math.Inf(1))}
	decs := []any{}
	for _, u := range []int64{-1, 0, 549, 550, 551, 700, 10} {
		decs = append(decs, iceberg.Decimal{Val: decimal128.FromI64(u), Scale: 2})
	}
	cols := []column{
		{typ: iceberg.PrimitiveTypes.Int32, values: int32s, key: func(v any) *big.Rat { return ratInt(int64(v.(int32))) },
			fkey: func(v any) float64 { return float64(v.(int32)) }, lits: numLits, litKey: exactLit},
		{typ: iceberg.PrimitiveTypes.Int64, values: int64s, key: func(v any) *big.Rat { return ratInt(v.(int64)) },
			fkey: func(v any) float64 { return float64(v.(int64)) }, lits: numLits, litKey: exactLit},
		{typ: iceberg.PrimitiveTypes.Float32, values: f32s, fkey: func(v any) float64 { return float64(v.(float32)) },
			lits: numLits, litKey: func(s scalar.Scalar) any { f, _ := floatNumber(s); return f }},
		{typ: iceberg.DecimalTypeOf(5, 2), values: decs, key: func(v any) *big.Rat {
			d := v.(iceberg.Decimal)
			return decimalRat(d.Val.BigInt(), int32(d.Scale))
		}, lits: numLits, litKey: exactLit},
	}
	// Dates against timestamps and strings: compared as timestamps, dates at midnight.
	us := &arrow.TimestampType{Unit: arrow.Microsecond}
	dayUS := int64(86400_000_000)
	cols = append(cols, column{
		typ:    iceberg.PrimitiveTypes.Date,
		values: []any{iceberg.Date(19726), iceberg.Date(19727), iceberg.Date(19728)},
		key:    func(v any) *big.Rat { return ratInt(int64(v.(iceberg.Date)) * dayUS) },
		lits: []scalar.Scalar{scalar.NewTimestampScalar(arrow.Timestamp(19727*dayUS), us), scalar.NewTimestampScalar(arrow.Timestamp(19727*dayUS+1), us),
			scalar.NewDate32Scalar(19727), scalar.NewStringScalar("2024-01-05")},
		litKey: func(s scalar.Scalar) any { r, _ := temporalValue(s, 1000, true); return r },
	})
	cols = append(cols, column{
		typ:    iceberg.PrimitiveTypes.Timestamp,
		values: []any{iceberg.Timestamp(19727 * dayUS), iceberg.Timestamp(19727*dayUS + 1), iceberg.Timestamp(19727*dayUS - 1), iceberg.Timestamp(19727*dayUS + 1000)},
		key:    func(v any) *big.Rat { return ratInt(int64(v.(iceberg.Timestamp))) },
		lits: []scalar.Scalar{scalar.NewDate32Scalar(19727), scalar.NewStringScalar("2024-01-05 00:00:00.000001"), scalar.NewStringScalar("2024-01-05T00:00:00.0000005"),
			scalar.NewTimestampScalar(arrow.Timestamp(19727*dayUS*1000+500), &arrow.TimestampType{Unit: arrow.Nanosecond})},
		litKey: func(s scalar.Scalar) any { r, _ := temporalValue(s, 1000, false); return r },
	})

	translated := 0
	for _, col := range cols {
		sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "c", Type: col.typ})
		for _, lit := range col.lits {
			for _, op := range ops {
				vals := []scalar.Scalar{lit}
				if op == catalog.OpIn {
					vals = append(vals, scalar.NewInt64Scalar(-2))
				}
				f := catalog.Filter{{{Column: 0, Op: op, Values: vals}}}
				expr, n := icebergFilter(f, sc, false)
				if n == 0 {
					continue
				}
				translated++
				eval, err := iceberg.ExpressionEvaluator(sc, expr, true)
				if err != nil {
					t.Fatalf("%s %s %s: %v", col.typ, op, lit, err)
				}
				for _, v := range col.values {
					want := false
					for _, l := range vals {
						lk := col.litKey(l)
						if lk == nil {
							continue
						}
						var c int
						switch k := lk.(type) {
						case *big.Rat:
							if col.key != nil {
								c = cmpRat(col.key(v), k)
							} else {
								f, _ := k.Float64()
								c = cmpFloat(col.fkey(v), f)
							}
						case float64:
							c = cmpFloat(col.fkey(v), k)
						}
						if op == catalog.OpIn {
							want = want || c == 0
						} else {
							want = holds(op, c)
						}
					}
					got, err := eval(row{v})
					if err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Errorf("%s value %v %s %s: iceberg %v (%s), engine %v", col.typ, v, op, lit, got, expr, want)
					}
				}
			}
		}
	}
	if translated < 100 {
		t.Errorf("only %d predicates translated", translated)
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestFilterDropsWhatItCannotTranslate(t *testing.T) {
	sc := iceberg.NewSchema(0,
		field(1, "s", iceberg.PrimitiveTypes.String, false),
		field(2, "st", &iceberg.StructType{FieldList: []iceberg.NestedField{field(3, "x", iceberg.PrimitiveTypes.Int32, false)}}, false),
		field(4, "b", iceberg.PrimitiveTypes.Bool, false),
		field(5, "dec", iceberg.DecimalTypeOf(10, 2), false),
		field(6, "i", iceberg.PrimitiveTypes.Int32, true),
	)
	for _, f := range []catalog.Filter{
		eq(0, scalar.NewInt64Scalar(1)), // string column, number
		eq(1, scalar.NewInt64Scalar(1)), // struct column
		{{{Column: 2, Op: catalog.OpLt, Values: []scalar.Scalar{scalar.NewBooleanScalar(true)}}}}, // no boolean ordering
		eq(3, scalar.NewFloat64Scalar(1.5)), // float vs decimal compares as float64
		eq(4, scalar.NewFloat64Scalar(math.NaN())),
		eq(4, scalar.NewFloat64Scalar(1<<53)),
		eq(4, scalar.NewFloat64Scalar(5.5)), // no int equals 5.5
		eq(4, scalar.NewInt64Scalar(1<<40)), // outside int32
		eq(9, scalar.NewInt64Scalar(1)),     // no such column
		{{{Column: 4, Op: catalog.OpEq, Values: []scalar.Scalar{scalar.NewInt64Scalar(1)}}, {Column: 0, Op: catalog.OpEq, Values: []scalar.Scalar{scalar.NewInt64Scalar(1)}}}},
	} {
		if e, n := icebergFilter(f, sc, false); n != 0 || !e.Equals(iceberg.AlwaysTrue{}) {
			t.Errorf("%s translated to %s", f, e)
		}
	}
	// For reading, optional columns admit NULLs and decimals are left out.
	e, _ := icebergFilter(catalog.Filter{{{Column: 0, Op: catalog.OpEq, Values: []scalar.Scalar{scalar.NewStringScalar("a")}}}}, sc, true)
	if want := iceberg.NewOr(iceberg.EqualTo(iceberg.Reference("s"), "a"), iceberg.IsNull(iceberg.Reference("s"))); !e.Equals(want) {
		t.Errorf("read filter %s, want %s", e, want)
	}
	if e, _ := icebergFilter(eq(3, scalar.NewInt64Scalar(1)), sc, true); !e.Equals(iceberg.AlwaysTrue{}) {
		t.Errorf("read filter on a decimal column: %s", e)
	}
	if e, _ := icebergFilter(eq(4, scalar.NewInt64Scalar(1)), sc, true); !e.Equals(iceberg.EqualTo(iceberg.Reference("i"), int32(1))) {
		t.Errorf("read filter on a required column: %s", e)
	}
}
