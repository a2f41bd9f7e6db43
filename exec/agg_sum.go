package exec

import (
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/cachedb/cachedb/internal/errs"
)

// aggSumDef is SUM(x). Exact inputs are summed as 128-bit decimals (scale of the input, 0 for
// integers), so no intermediate overflow can happen before 38 digits; floats and strings are
// summed as float64. State: the partial sum (NULL when the group saw no value).
func aggSumDef(t arrow.DataType) (*aggregateDef, error) {
	kind, err := aggNumericKind("sum", t)
	if err != nil {
		return nil, err
	}
	if kind == aggArgFloat {
		return &aggregateDef{
			result: arrow.PrimitiveTypes.Float64,
			states: []arrow.DataType{arrow.PrimitiveTypes.Float64},
			newAcc: func() aggAccumulator { return &aggFloatSum{} },
		}, nil
	}
	scale := aggInputScale(t)
	dt := &arrow.Decimal128Type{Precision: 38, Scale: scale}
	return &aggregateDef{
		result: dt,
		states: []arrow.DataType{dt},
		newAcc: func() aggAccumulator { return &aggDecimalSum{scale: scale, outScale: scale, outPrecision: 38} },
	}, nil
}

// aggAvgDef is AVG(x): the sum divided by the count, rounded half away from zero to scale + 4 for
// exact inputs. State: the partial sum (as SUM's) and the partial count (int64).
func aggAvgDef(t arrow.DataType) (*aggregateDef, error) {
	kind, err := aggNumericKind("avg", t)
	if err != nil {
		return nil, err
	}
	if kind == aggArgFloat {
		return &aggregateDef{
			result: arrow.PrimitiveTypes.Float64,
			states: []arrow.DataType{arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Int64},
			newAcc: func() aggAccumulator { return &aggFloatSum{avg: true} },
		}, nil
	}
	scale := aggInputScale(t)
	outScale := min(scale+4, aggMaxScale)
	outPrecision := aggAvgPrecision(t)
	return &aggregateDef{
		result: &arrow.Decimal128Type{Precision: outPrecision, Scale: outScale},
		states: []arrow.DataType{&arrow.Decimal128Type{Precision: 38, Scale: scale}, arrow.PrimitiveTypes.Int64},
		newAcc: func() aggAccumulator {
			return &aggDecimalSum{scale: scale, outScale: outScale, outPrecision: outPrecision, avg: true}
		},
	}, nil
}

// aggAvgPrecision is the precision of AVG over an exact type, as MySQL declares it: the
// argument's precision plus 4 (19 digits for the engine's integers), at most 38. Declaring the
// real width rather than 38 matters beyond display: a quotient of the average keeps as many
// decimals as 38 digits leave beside its integer digits (sql/quotients.go), so
// AVG(k) / 7 * 7 is 1.50000000 for an average of 1.5, as in MySQL, not 1.49999997.
func aggAvgPrecision(t arrow.DataType) int32 {
	if d, ok := t.(*arrow.Decimal128Type); ok {
		return min(d.Precision+4, 38)
	}
	return 19 + 4
}

// aggInputScale is the decimal scale of an exact SUM/AVG input (0 for integers and booleans).
func aggInputScale(t arrow.DataType) int32 {
	if d, ok := t.(*arrow.Decimal128Type); ok {
		return d.Scale
	}
	return 0
}

// aggDecimalSum sums exact values at the input's scale. Integer inputs are first added into a
// per-group int64 (small), which is moved into the 128-bit sum only when the next addition
// would overflow it and before any result is read, so the common case is one machine addition
// per row and the total is still exact.
type aggDecimalSum struct {
	scale, outScale int32
	// outPrecision is the declared precision of the result (38 for SUM).
	outPrecision int32
	avg          bool
	sums         []decimal128.Num
	small        []int64
	counts       []int64
	// lanes and laneCounts are addDecimalLanes' scratch.
	lanes, laneCounts []int64
}

// Rows of a batch without NULLs over few groups (at least 4 rows per lane) are summed in
// sumLanes interleaved lanes per group (row i into lane i mod sumLanes), folded into the groups'
// sums at the end of the batch: consecutive rows of one group (runs are common: TPC-H's
// lineitem holds an order's items together) then add into different words, so each addition
// does not wait for the one before it to be stored.
const (
	sumLanes         = 4
	sumLanesMaxGroup = 256
)

func (a *aggDecimalSum) grow(n int) {
	a.sums = aggGrow(a.sums, n, decimal128.Num{})
	a.small = aggGrow(a.small, n, 0)
	a.counts = aggGrow(a.counts, n, 0)
}

// flush moves the int64 partial sums into the 128-bit sums.
func (a *aggDecimalSum) flush() {
	for g, s := range a.small {
		if s != 0 {
			a.sums[g] = a.sums[g].Add(decimal128.FromI64(s))
			a.small[g] = 0
		}
	}
}

// addInt64s adds vals[i] to group groups[i] for every row i where arg is not NULL.
func (a *aggDecimalSum) addInt64s(groups []uint32, vals []int64, arg arrow.Array) {
	nulls := arg.NullN() > 0
	for i, g := range groups {
		if !aggValid(arg, nulls, i) {
			continue
		}
		v := vals[i]
		s := a.small[g]
		r := s + v
		if (s^r)&(v^r) < 0 { // s + v overflowed int64: keep s in the wide sum, restart from v
			a.sums[g] = a.sums[g].Add(decimal128.FromI64(s))
			r = v
		}
		a.small[g] = r
		a.counts[g]++
	}
}

// addDecimals adds vals[i] to group groups[i] for every row i where arg is not NULL: a value
// that fits in int64 (most do) into the group's int64 partial sum as addInt64s does, a wider
// one into its 128-bit sum.
func (a *aggDecimalSum) addDecimals(groups []uint32, vals []decimal128.Num, arg arrow.Array) {
	nulls := arg.NullN() > 0
	if !nulls && len(a.small) <= sumLanesMaxGroup && len(groups) >= 4*sumLanes*len(a.small) {
		a.addDecimalLanes(groups, vals)
		return
	}
	for i, g := range groups {
		if !aggValid(arg, nulls, i) {
			continue
		}
		a.counts[g]++
		v := int64(vals[i].LowBits())
		if vals[i].HighBits() != v>>63 {
			a.sums[g] = a.sums[g].Add(vals[i])
			continue
		}
		s := a.small[g]
		r := s + v
		if (s^r)&(v^r) < 0 {
			a.sums[g] = a.sums[g].Add(decimal128.FromI64(s))
			r = v
		}
		a.small[g] = r
	}
}

// addDecimalLanes is addDecimals for an argument without NULLs, in lanes (see sumLanes).
func (a *aggDecimalSum) addDecimalLanes(groups []uint32, vals []decimal128.Num) {
	lanes := resize(a.lanes, sumLanes*len(a.small))
	counts := resize(a.laneCounts, len(lanes))
	a.lanes, a.laneCounts = lanes, counts
	clear(lanes)
	clear(counts)
	vals = vals[:len(groups)]
	for i, g := range groups {
		j := int(g)*sumLanes + i%sumLanes
		counts[j]++
		v := int64(vals[i].LowBits())
		if vals[i].HighBits() != v>>63 {
			a.sums[g] = a.sums[g].Add(vals[i])
			continue
		}
		s := lanes[j]
		r := s + v
		if (s^r)&(v^r) < 0 {
			a.sums[g] = a.sums[g].Add(decimal128.FromI64(s))
			r = v
		}
		lanes[j] = r
	}
	for j, v := range lanes {
		g := j / sumLanes
		a.counts[g] += counts[j]
		s := a.small[g]
		r := s + v
		if (s^r)&(v^r) < 0 {
			a.sums[g] = a.sums[g].Add(decimal128.FromI64(s))
			r = v
		}
		a.small[g] = r
	}
}

func (a *aggDecimalSum) update(groups []uint32, args []arrow.Array) error {
	arg := args[0]
	nulls := arg.NullN() > 0
	switch in := arg.(type) {
	case *array.Null:
	case *array.Int64:
		a.addInt64s(groups, in.Int64Values(), arg)
	case *array.Boolean:
		for i, g := range groups {
			if aggValid(arg, nulls, i) {
				if in.Value(i) {
					a.sums[g] = a.sums[g].Add(decimal128.FromI64(1))
				}
				a.counts[g]++
			}
		}
	case *array.Decimal128:
		a.addDecimals(groups, in.Values(), arg)
	default:
		return errs.Internalf("exact sum cannot read %s", arg.DataType())
	}
	return nil
}

func (a *aggDecimalSum) merge(groups []uint32, states []arrow.Array) error {
	sums, ok := states[0].(*array.Decimal128)
	if !ok {
		return errs.Internalf("sum state must be decimal128, got %s", states[0].DataType())
	}
	vals := sums.Values()
	nulls := sums.NullN() > 0
	counts, err := avgCountState(a.avg, states)
	if err != nil {
		return err
	}
	for i, g := range groups {
		if !aggValid(sums, nulls, i) {
			continue
		}
		a.sums[g] = a.sums[g].Add(vals[i])
		a.counts[g] += mergedCount(counts, i)
	}
	return nil
}

// avgCountState returns the row counts an AVG's partial state carries next to its sums (nil for
// SUM, whose state is the sum alone).
func avgCountState(avg bool, states []arrow.Array) ([]int64, error) {
	if !avg {
		return nil, nil
	}
	c, ok := states[1].(*array.Int64)
	if !ok {
		return nil, errs.Internalf("avg count state must be int64, got %s", states[1].DataType())
	}
	return c.Int64Values(), nil
}

// mergedCount is how many input rows partial row i stands for: its AVG count, or one for SUM.
func mergedCount(counts []int64, i int) int64 {
	if counts == nil {
		return 1
	}
	return counts[i]
}

func (a *aggDecimalSum) finish(mem memory.Allocator) (arrow.Array, error) {
	a.flush()
	out := make([]decimal128.Num, len(a.sums))
	valid := make([]bool, len(a.sums))
	for g, sum := range a.sums {
		if a.counts[g] == 0 {
			continue
		}
		valid[g] = true
		if !a.avg {
			out[g] = sum
		} else {
			out[g] = aggDivideRounded(sum, a.outScale-a.scale, a.counts[g])
		}
		if !out[g].FitsInPrecision(38) {
			return nil, errs.Invalidf("DECIMAL value is out of range in SUM/AVG")
		}
	}
	return aggBuildArray(mem, &arrow.Decimal128Type{Precision: a.outPrecision, Scale: a.outScale}, out, valid)
}

func (a *aggDecimalSum) state(mem memory.Allocator) ([]arrow.Array, error) {
	a.flush()
	valid := make([]bool, len(a.sums))
	for g := range a.sums {
		valid[g] = a.counts[g] > 0
	}
	sums, err := aggBuildArray(mem, &arrow.Decimal128Type{Precision: 38, Scale: a.scale}, a.sums, valid)
	if err != nil {
		return nil, err
	}
	if !a.avg {
		return []arrow.Array{sums}, nil
	}
	counts, err := aggBuildArray(mem, arrow.PrimitiveTypes.Int64, a.counts, nil)
	if err != nil {
		sums.Release()
		return nil, err
	}
	return []arrow.Array{sums, counts}, nil
}

// aggDivideRounded returns sum * 10^extraScale / count, rounded half away from zero.
func aggDivideRounded(sum decimal128.Num, extraScale int32, count int64) decimal128.Num {
	n := sum.BigInt()
	n.Mul(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(extraScale)), nil))
	d := big.NewInt(count)
	q, r := new(big.Int).QuoRem(n, d, new(big.Int))
	// |r| * 2 >= count rounds away from zero.
	if r.Abs(r).Lsh(r, 1).Cmp(d) >= 0 {
		if n.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return decimal128.FromBigInt(q)
}

// aggFloatSum sums float64 values (and strings converted by their numeric prefix).
type aggFloatSum struct {
	avg    bool
	sums   []float64
	counts []int64
}

func (a *aggFloatSum) grow(n int) {
	a.sums = aggGrow(a.sums, n, 0)
	a.counts = aggGrow(a.counts, n, 0)
}

func (a *aggFloatSum) update(groups []uint32, args []arrow.Array) error {
	arg := args[0]
	nulls := arg.NullN() > 0
	switch in := arg.(type) {
	case *array.Float64:
		vals := in.Float64Values()
		for i, g := range groups {
			if aggValid(arg, nulls, i) {
				a.sums[g] += vals[i]
				a.counts[g]++
			}
		}
	case *array.String:
		for i, g := range groups {
			if aggValid(arg, nulls, i) {
				a.sums[g] += parseFloatPrefix(in.Value(i))
				a.counts[g]++
			}
		}
	default:
		return errs.Internalf("float sum cannot read %s", arg.DataType())
	}
	return nil
}

func (a *aggFloatSum) merge(groups []uint32, states []arrow.Array) error {
	sums, ok := states[0].(*array.Float64)
	if !ok {
		return errs.Internalf("sum state must be float64, got %s", states[0].DataType())
	}
	vals := sums.Float64Values()
	nulls := sums.NullN() > 0
	counts, err := avgCountState(a.avg, states)
	if err != nil {
		return err
	}
	for i, g := range groups {
		if !aggValid(sums, nulls, i) {
			continue
		}
		a.sums[g] += vals[i]
		a.counts[g] += mergedCount(counts, i)
	}
	return nil
}

func (a *aggFloatSum) finish(mem memory.Allocator) (arrow.Array, error) {
	out := make([]float64, len(a.sums))
	valid := make([]bool, len(a.sums))
	for g, sum := range a.sums {
		if a.counts[g] == 0 {
			continue
		}
		valid[g] = true
		out[g] = sum
		if a.avg {
			out[g] = sum / float64(a.counts[g])
		}
	}
	return aggBuildArray(mem, arrow.PrimitiveTypes.Float64, out, valid)
}

func (a *aggFloatSum) state(mem memory.Allocator) ([]arrow.Array, error) {
	valid := make([]bool, len(a.sums))
	for g := range a.sums {
		valid[g] = a.counts[g] > 0
	}
	sums, err := aggBuildArray(mem, arrow.PrimitiveTypes.Float64, a.sums, valid)
	if err != nil {
		return nil, err
	}
	if !a.avg {
		return []arrow.Array{sums}, nil
	}
	counts, err := aggBuildArray(mem, arrow.PrimitiveTypes.Int64, a.counts, nil)
	if err != nil {
		sums.Release()
		return nil, err
	}
	return []arrow.Array{sums, counts}, nil
}
