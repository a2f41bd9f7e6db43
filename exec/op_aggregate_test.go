package exec

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

var aggTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "g", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

// aggTestInput has three groups of g (1, 2 and NULL) spread over two partitions and batches.
var aggTestInput = [][]string{
	{
		`[{"g":1,"x":1,"d":"1.50","f":1.5,"s":"b","b":true},
		  {"g":1,"x":2,"d":"2.25","f":null,"s":"a","b":false}]`,
		`[{"g":2,"x":null,"d":null,"f":2.0,"s":null,"b":null}]`,
	},
	{
		`[{"g":null,"x":4,"d":"-1.00","f":-0.5,"s":"c","b":true},
		  {"g":null,"x":4,"d":"3.00","f":0.5,"s":"c","b":true},
		  {"g":1,"x":2,"d":"0.01","f":3,"s":"a","b":true}]`,
	},
}

// aggTestMerge is a test-only single-partition operator that reads its input's partitions one
// after the other.
type aggTestMerge struct{ input Operator }

func (m *aggTestMerge) Schema() *arrow.Schema { return m.input.Schema() }
func (m *aggTestMerge) Children() []Operator  { return []Operator{m.input} }
func (m *aggTestMerge) Partitions() int       { return 1 }
func (m *aggTestMerge) String() string        { return "TestMerge" }
func (m *aggTestMerge) Execute(ctx context.Context, _ int, tc *TaskContext) (array.RecordReader, error) {
	var batches []arrow.RecordBatch
	for p := 0; p < m.input.Partitions(); p++ {
		rdr, err := m.input.Execute(ctx, p, tc)
		if err != nil {
			return nil, err
		}
		for rdr.Next() {
			b := rdr.RecordBatch()
			b.Retain()
			batches = append(batches, b)
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return nil, err
		}
	}
	out, err := array.NewRecordReader(m.input.Schema(), batches)
	for _, b := range batches {
		b.Release()
	}
	return out, err
}

func aggSpec(fn string, distinct bool, args ...string) AggregateSpec {
	spec := AggregateSpec{Name: fn, Func: fn, Distinct: distinct}
	for _, a := range args {
		spec.Args = append(spec.Args, aggCol(aggTestSchema, a))
		spec.Name += "_" + a
	}
	return spec
}

func TestHashAggregateSingle(t *testing.T) {
	tests := []struct {
		name string
		spec AggregateSpec
		want []string // per group in first-seen order: 1, 2, NULL
	}{
		{"count star", aggSpec("count", false), []string{"3", "1", "2"}},
		{"count x", aggSpec("count", false, "x"), []string{"3", "0", "2"}},
		{"sum int", aggSpec("sum", false, "x"), []string{"5", "(null)", "8"}},
		{"avg int", aggSpec("avg", false, "x"), []string{"1.6667", "(null)", "4"}},
		{"sum decimal", aggSpec("sum", false, "d"), []string{"3.76", "(null)", "2"}},
		{"avg decimal", aggSpec("avg", false, "d"), []string{"1.253333", "(null)", "1"}},
		{"sum float", aggSpec("sum", false, "f"), []string{"4.5", "2", "0"}},
		{"avg float", aggSpec("avg", false, "f"), []string{"2.25", "2", "0"}},
		{"sum string", aggSpec("sum", false, "s"), []string{"0", "(null)", "0"}},
		{"sum bool", aggSpec("sum", false, "b"), []string{"2", "(null)", "2"}},
		{"min string", aggSpec("min", false, "s"), []string{"a", "(null)", "c"}},
		{"max string", aggSpec("max", false, "s"), []string{"b", "(null)", "c"}},
		{"min int", aggSpec("min", false, "x"), []string{"1", "(null)", "4"}},
		{"max decimal", aggSpec("max", false, "d"), []string{"2.25", "(null)", "3"}},
		{"min float", aggSpec("min", false, "f"), []string{"1.5", "2", "-0.5"}},
		{"max bool", aggSpec("max", false, "b"), []string{"true", "(null)", "true"}},
		{"min bool", aggSpec("min", false, "b"), []string{"false", "(null)", "true"}},
		{"any_value", aggSpec("any_value", false, "s"), []string{"b", "(null)", "c"}},
		{"group_concat", aggSpec("group_concat", false, "x"), []string{"1,2,2", "(null)", "4,4"}},
		{"group_concat two args", aggSpec("group_concat", false, "s", "x"), []string{"b1,a2,a2", "(null)", "c4,c4"}},
		{"group_concat decimal", aggSpec("group_concat", false, "d"), []string{"1.50,2.25,0.01", "(null)", "-1.00,3.00"}},
		{"bit_or", aggSpec("bit_or", false, "x"), []string{"3", "0", "4"}},
		{"bit_and", aggSpec("bit_and", false, "x"), []string{"0", "-1", "4"}},
		{"bit_xor", aggSpec("bit_xor", false, "x"), []string{"1", "0", "0"}},
		{"count distinct", aggSpec("count", true, "x"), []string{"2", "0", "1"}},
		{"count distinct two", aggSpec("count", true, "s", "x"), []string{"2", "0", "1"}},
		{"sum distinct", aggSpec("sum", true, "x"), []string{"3", "(null)", "4"}},
		{"avg distinct", aggSpec("avg", true, "x"), []string{"1.5", "(null)", "4"}},
		{"group_concat distinct", aggSpec("group_concat", true, "s"), []string{"b,a", "(null)", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc, mem := aggTestContext(t, 2)
			defer mem.AssertSize(t, 0)
			src := &aggTestMerge{input: &aggTestSource{schema: aggTestSchema, parts: aggTestInput}}
			g := aggCol(aggTestSchema, "g")
			op, err := NewHashAggregate(src, []Expr{g}, []string{"g"}, []AggregateSpec{tt.spec}, AggregateSingle)
			if err != nil {
				t.Fatal(err)
			}
			got := aggTestRows(t, op, tc)
			want := []string{"1|" + tt.want[0], "2|" + tt.want[1], "(null)|" + tt.want[2]}
			aggEqual(t, got, want)
		})
	}
}

func TestHashAggregateNoGroups(t *testing.T) {
	aggs := []AggregateSpec{aggSpec("count", false), aggSpec("count", false, "x"), aggSpec("sum", false, "x"),
		aggSpec("min", false, "s"), aggSpec("avg", false, "d"), aggSpec("count", true, "x")}
	tests := []struct {
		name  string
		parts [][]string
		want  []string
	}{
		{"empty input", [][]string{{}}, []string{"0|0|(null)|(null)|(null)|0"}},
		{"empty batch", [][]string{{`[]`}}, []string{"0|0|(null)|(null)|(null)|0"}},
		{"all null", [][]string{{`[{"x":null,"s":null,"d":null}]`}}, []string{"1|0|(null)|(null)|(null)|0"}},
		{"values", [][]string{{`[{"x":3,"s":"q","d":"1.00"},{"x":3,"s":"p","d":"2.00"}]`}}, []string{"2|2|6|p|1.5|1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc, mem := aggTestContext(t, 0)
			defer mem.AssertSize(t, 0)
			src := &aggTestSource{schema: aggTestSchema, parts: tt.parts}
			op, err := NewHashAggregate(src, nil, nil, aggs, AggregateSingle)
			if err != nil {
				t.Fatal(err)
			}
			aggEqual(t, aggTestRows(t, op, tc), tt.want)
		})
	}
}

func TestHashAggregateEmptyInputWithGroups(t *testing.T) {
	tc, mem := aggTestContext(t, 0)
	defer mem.AssertSize(t, 0)
	src := &aggTestSource{schema: aggTestSchema, parts: [][]string{{}}}
	op, err := NewHashAggregate(src, []Expr{aggCol(aggTestSchema, "g")}, []string{"g"}, []AggregateSpec{aggSpec("count", false)}, AggregateSingle)
	if err != nil {
		t.Fatal(err)
	}
	aggEqual(t, aggTestRows(t, op, tc), nil)
}

func TestHashAggregatePartialFinalEqualsSingle(t *testing.T) {
	var aggs []AggregateSpec
	for _, fn := range []string{"count", "sum", "avg", "min", "max", "bit_or", "bit_and", "bit_xor"} {
		aggs = append(aggs, aggSpec(fn, false, "x"))
	}
	aggs = append(aggs, aggSpec("count", false), aggSpec("sum", false, "d"), aggSpec("avg", false, "d"),
		aggSpec("avg", false, "f"), aggSpec("sum", false, "f"), aggSpec("min", false, "s"), aggSpec("max", false, "b"),
		aggSpec("any_value", false, "g"))
	for _, groups := range [][]string{{"g"}, {"g", "s"}, nil} {
		t.Run(strings.Join(groups, ","), func(t *testing.T) {
			tc, mem := aggTestContext(t, 2)
			defer mem.AssertSize(t, 0)
			src := &aggTestSource{schema: aggTestSchema, parts: aggTestInput}
			var keys []Expr
			for _, g := range groups {
				keys = append(keys, aggCol(aggTestSchema, g))
			}
			single, err := NewHashAggregate(&aggTestMerge{input: src}, keys, groups, aggs, AggregateSingle)
			if err != nil {
				t.Fatal(err)
			}
			partial, err := NewHashAggregate(src, keys, groups, aggs, AggregatePartial)
			if err != nil {
				t.Fatal(err)
			}
			var finalKeys []Expr
			for i, g := range groups {
				finalKeys = append(finalKeys, &aggTestCol{i: i, name: g, t: keys[i].DataType()})
			}
			final, err := NewHashAggregate(&aggTestMerge{input: partial}, finalKeys, groups, aggs, AggregateFinal)
			if err != nil {
				t.Fatal(err)
			}
			if !final.Schema().Equal(single.Schema()) {
				t.Fatalf("final schema %s differs from single %s", final.Schema(), single.Schema())
			}
			aggEqual(t, aggSorted(aggTestRows(t, final, tc)), aggSorted(aggTestRows(t, single, tc)))
		})
	}
}

func TestHashAggregateErrors(t *testing.T) {
	src := &aggTestSource{schema: aggTestSchema, parts: aggTestInput}
	tests := []struct {
		name string
		aggs []AggregateSpec
		mode AggregateMode
	}{
		{"distinct partial", []AggregateSpec{aggSpec("count", true, "x")}, AggregatePartial},
		{"unknown function", []AggregateSpec{aggSpec("median", false, "x")}, AggregateSingle},
		{"sum arity", []AggregateSpec{aggSpec("sum", false, "x", "d")}, AggregateSingle},
		{"final over raw input", []AggregateSpec{aggSpec("avg", false, "s")}, AggregateFinal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewHashAggregate(src, nil, nil, tt.aggs, tt.mode); err == nil {
				t.Fatal("expected an error")
			}
		})
	}
}

func TestHashAggregateString(t *testing.T) {
	src := &aggTestSource{schema: aggTestSchema, parts: aggTestInput}
	_, err := NewHashAggregate(src, []Expr{aggCol(aggTestSchema, "g"), aggCol(aggTestSchema, "s")}, []string{"g", "s"},
		[]AggregateSpec{aggSpec("count", false), aggSpec("sum", false, "x"), aggSpec("count", true, "d")}, AggregatePartial)
	if err == nil {
		t.Fatal("distinct in partial mode must fail")
	}
	op, err := NewHashAggregate(src, []Expr{aggCol(aggTestSchema, "g"), aggCol(aggTestSchema, "s")}, []string{"g", "s"},
		[]AggregateSpec{aggSpec("count", false), aggSpec("sum", false, "x")}, AggregatePartial)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := op.String(), "HashAggregate(mode=partial, group=[g, s], aggs=[count(*), sum(x)])"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func TestResolveAggregate(t *testing.T) {
	dec := func(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	i64, f64, str := arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64, arrow.BinaryTypes.String
	tests := []struct {
		fn   string
		args []arrow.DataType
		want arrow.DataType
	}{
		{"count", nil, i64},
		{"COUNT", []arrow.DataType{str}, i64},
		{"sum", []arrow.DataType{i64}, dec(38, 0)},
		{"sum", []arrow.DataType{dec(10, 2)}, dec(38, 2)},
		{"sum", []arrow.DataType{f64}, f64},
		{"sum", []arrow.DataType{str}, f64},
		{"avg", []arrow.DataType{i64}, dec(23, 4)},
		{"avg", []arrow.DataType{dec(10, 2)}, dec(14, 6)},
		{"avg", []arrow.DataType{f64}, f64},
		{"min", []arrow.DataType{str}, str},
		{"max", []arrow.DataType{arrow.FixedWidthTypes.Date32}, arrow.FixedWidthTypes.Date32},
		{"group_concat", []arrow.DataType{i64, str}, str},
		{"any_value", []arrow.DataType{dec(5, 1)}, dec(5, 1)},
		{"bit_xor", []arrow.DataType{i64}, i64},
	}
	for _, tt := range tests {
		got, err := ResolveAggregate(tt.fn, tt.args, false)
		if err != nil {
			t.Errorf("%s%v: %v", tt.fn, tt.args, err)
			continue
		}
		if !arrow.TypeEqual(got, tt.want) {
			t.Errorf("%s%v = %s, want %s", tt.fn, tt.args, got, tt.want)
		}
	}
}
