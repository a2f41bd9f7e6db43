package demo

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// The rides table: synthetic taxi rides with a few model features and a binary label, made to
// show what cachedb does with a real Iceberg table (partition, file and row-group pruning, time
// travel, training reads). Everything below is a pure function of the seeds, so every
// generated warehouse holds the same rows.
const (
	RidesTable = "rides"
	// RidesRows is the number of rows in the table's current snapshot.
	RidesRows = 200_000
	// RidesDays is how many days of rides the table covers, from RidesStart.
	RidesDays = 30
	// InitialDays is how many of those days the first snapshot holds; the second snapshot
	// appends the rest, as a nightly load would.
	InitialDays = 23
	// InitialTag names the first snapshot, so time travel has a stable name to use.
	InitialTag = "initial"
	// RowGroupRows caps the rows of a Parquet row group. A day's file holds about 6,700 rows
	// sorted by city, so it has several row groups, each covering one or two cities: a filter
	// on city skips most of them.
	RowGroupRows = 1024
)

// RidesStart is midnight (UTC, stored as a timestamp without zone) of the first day.
var RidesStart = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Cities are the values of rides.city, in sort order.
var Cities = []string{"Amsterdam", "Berlin", "Chicago", "Lisbon", "London", "New York", "Paris", "Tokyo"}

// cityModel is what a city's rides look like.
type cityModel struct {
	share   float64 // of all rides
	base    float64 // flag fall
	perKm   float64
	perMin  float64
	speed   float64 // km/h off-peak
	tipping float64 // mean tip share of the fare
}

var cityModels = map[string]cityModel{
	"Amsterdam": {0.08, 3.20, 2.30, 0.40, 24, 0.07},
	"Berlin":    {0.12, 3.90, 2.00, 0.30, 26, 0.08},
	"Chicago":   {0.11, 3.25, 1.40, 0.30, 30, 0.17},
	"Lisbon":    {0.06, 3.25, 0.50, 0.20, 28, 0.05},
	"London":    {0.17, 3.80, 2.10, 0.45, 20, 0.10},
	"New York":  {0.22, 3.00, 1.55, 0.50, 18, 0.19},
	"Paris":     {0.14, 4.20, 1.20, 0.35, 22, 0.06},
	"Tokyo":     {0.10, 4.50, 2.40, 0.40, 25, 0.00},
}

// Field ids of the rides schema; the partition spec and sort order refer to them.
const (
	idRideID = iota + 1
	idPickupAt
	idCity
	idPassengers
	idDistance
	idFare
	idTip
	idF0
	idF1
	idF2
	idF3
	idF4
	idF5
	idLabel
)

// ridesSchema is the Iceberg schema. Column docs travel with the table's metadata.
func ridesSchema() *iceberg.Schema {
	f := func(id int, name string, typ iceberg.Type, required bool, doc string) iceberg.NestedField {
		return iceberg.NestedField{ID: id, Name: name, Type: typ, Required: required, Doc: doc}
	}
	return iceberg.NewSchemaWithIdentifiers(0, []int{idRideID},
		f(idRideID, "ride_id", iceberg.PrimitiveTypes.Int64, true, "unique, increasing with pickup_at"),
		f(idPickupAt, "pickup_at", iceberg.PrimitiveTypes.Timestamp, true, "pickup time (UTC)"),
		f(idCity, "city", iceberg.PrimitiveTypes.String, true, "one of 8 cities"),
		f(idPassengers, "passengers", iceberg.PrimitiveTypes.Int32, false, "1 to 6"),
		f(idDistance, "distance_km", iceberg.PrimitiveTypes.Float64, false, "trip length in km"),
		f(idFare, "fare", iceberg.DecimalTypeOf(10, 2), false, "metered fare"),
		f(idTip, "tip", iceberg.PrimitiveTypes.Float64, false, "NULL for cash payments"),
		f(idF0, "f0", iceberg.PrimitiveTypes.Float32, false, "feature: standardized log distance"),
		f(idF1, "f1", iceberg.PrimitiveTypes.Float32, false, "feature: sin of the hour of day"),
		f(idF2, "f2", iceberg.PrimitiveTypes.Float32, false, "feature: cos of the hour of day"),
		f(idF3, "f3", iceberg.PrimitiveTypes.Float32, false, "feature: scaled passenger count"),
		f(idF4, "f4", iceberg.PrimitiveTypes.Float32, false, "feature: rider score, standard normal"),
		f(idF5, "f5", iceberg.PrimitiveTypes.Float32, false, "feature: pure noise, standard normal"),
		f(idLabel, "label", iceberg.PrimitiveTypes.Int32, false, "0/1 target drawn from a logistic model of f0..f4"),
	)
}

// ridesArrowSchema is the Arrow schema of the generated batches, matching ridesSchema
// (timestamp without zone, microseconds; float is float32; nullability = !required).
func ridesArrowSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "ride_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "pickup_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "city", Type: arrow.BinaryTypes.String},
		{Name: "passengers", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "distance_km", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "fare", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "tip", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "f0", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f1", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f2", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f3", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f4", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f5", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "label", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
}

// ridesSpec partitions by day(pickup_at): a pickup_at range prunes whole files. City is not a
// partition column (8 × 30 partitions of a few hundred rows would be files too small to be
// realistic); it is the leading sort column instead, so a city filter prunes row groups.
func ridesSpec() iceberg.PartitionSpec {
	return iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{idPickupAt}, FieldID: 1000, Name: "pickup_day", Transform: iceberg.DayTransform{},
	})
}

// ridesSortOrder is (city, pickup_at). iceberg-go's writer sorts each batch it is given by the
// table's sort order; the generator hands it one batch per day, so every data file is sorted.
func ridesSortOrder() (table.SortOrder, error) {
	return table.NewSortOrder(1, []table.SortField{
		{SourceIDs: []int{idCity}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst},
		{SourceIDs: []int{idPickupAt}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst},
	})
}

// dayRideCounts splits RidesRows over the days: weekends and Fridays are busier. The split is
// exact (the counts sum to RidesRows).
func dayRideCounts() []int {
	weights := make([]float64, RidesDays)
	var total float64
	for d := range weights {
		w := 1.0
		switch RidesStart.AddDate(0, 0, d).Weekday() {
		case time.Friday:
			w = 1.10
		case time.Saturday:
			w = 1.20
		case time.Sunday:
			w = 1.05
		}
		weights[d] = w
		total += w
	}
	counts := make([]int, RidesDays)
	assigned := 0
	for d, w := range weights {
		counts[d] = int(math.Floor(float64(RidesRows) * w / total))
		assigned += counts[d]
	}
	for d := 0; assigned < RidesRows; d = (d + 1) % RidesDays {
		counts[d]++
		assigned++
	}
	return counts
}

// hourWeights is the share of a day's rides starting in each hour: a morning and an evening
// peak, a quiet night.
var hourWeights = [24]float64{
	1.2, 0.8, 0.6, 0.4, 0.4, 0.7, 1.5, 3.0, 4.8, 4.2, 3.2, 3.0,
	3.4, 3.3, 3.2, 3.5, 4.2, 5.2, 5.6, 4.8, 4.0, 3.4, 2.6, 1.8,
}

// ride is one generated row.
type ride struct {
	at         int64 // microseconds since the epoch
	city       string
	passengers int32
	distance   float64
	fareCents  int64
	tip        float64
	tipNull    bool
	f          [6]float32
	label      int32
}

// ridesGen produces the rows day by day; ride ids continue across days, in pickup order.
type ridesGen struct {
	rng    *rand.Rand
	counts []int
	nextID int64
	cityCum,
	hourCum []float64
}

func newRidesGen() *ridesGen {
	g := &ridesGen{rng: rand.New(rand.NewPCG(20260101, 0x5eed)), counts: dayRideCounts(), nextID: 1}
	var c float64
	for _, name := range Cities {
		c += cityModels[name].share
		g.cityCum = append(g.cityCum, c)
	}
	c = 0
	for _, w := range hourWeights {
		c += w
		g.hourCum = append(g.hourCum, c)
	}
	return g
}

// pick returns the index of the bucket a uniform draw falls in, given cumulative weights.
func (g *ridesGen) pick(cum []float64) int {
	x := g.rng.Float64() * cum[len(cum)-1]
	i, _ := slices.BinarySearch(cum, x)
	return min(i, len(cum)-1)
}

// day generates the rides of day d (0-based), in pickup order.
func (g *ridesGen) day(d int) []ride {
	dayStart := RidesStart.AddDate(0, 0, d)
	weekend := dayStart.Weekday() == time.Saturday || dayStart.Weekday() == time.Sunday
	rides := make([]ride, g.counts[d])
	for i := range rides {
		hour := g.pick(g.hourCum)
		// Whole seconds, as a meter records them.
		offset := time.Duration(hour)*time.Hour + time.Duration(g.rng.IntN(3600))*time.Second
		rides[i].at = dayStart.Add(offset).UnixMicro()
	}
	slices.SortStableFunc(rides, func(a, b ride) int { return cmp.Compare(a.at, b.at) })
	for i := range rides {
		r := &rides[i]
		hour := time.UnixMicro(r.at).UTC().Hour()
		r.city = Cities[g.pick(g.cityCum)]
		m := cityModels[r.city]
		r.passengers = []int32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 4, 5, 6}[g.rng.IntN(20)]
		if weekend && r.passengers < 4 && g.rng.Float64() < 0.2 {
			r.passengers++
		}
		r.distance = math.Round(min(max(math.Exp(1.35+0.65*g.rng.NormFloat64()), 0.3), 80)*100) / 100
		rush := (hour >= 7 && hour <= 9) || (hour >= 16 && hour <= 19)
		speed := m.speed
		if rush {
			speed *= 0.65
		}
		minutes := r.distance / speed * 60 * (0.85 + 0.3*g.rng.Float64())
		fare := m.base + m.perKm*r.distance + m.perMin*minutes
		if rush && g.rng.Float64() < 0.3 {
			fare *= 1.2 + 0.4*g.rng.Float64() // surge
		}
		r.fareCents = int64(math.Round(fare * 100))

		r.f[0] = float32((math.Log1p(r.distance) - 1.6) / 0.55)
		r.f[1] = float32(math.Sin(2 * math.Pi * float64(hour) / 24))
		r.f[2] = float32(math.Cos(2 * math.Pi * float64(hour) / 24))
		r.f[3] = float32(r.passengers-1) / 2.5
		r.f[4] = float32(g.rng.NormFloat64())
		r.f[5] = float32(g.rng.NormFloat64())
		z := -0.3 + 1.2*float64(r.f[0]) - 0.9*float64(r.f[1]) + 0.5*float64(r.f[2]) + 0.4*float64(r.f[3]) + 1.1*float64(r.f[4])
		if g.rng.Float64() < 1/(1+math.Exp(-z)) {
			r.label = 1
		}

		if g.rng.Float64() < 0.07 {
			r.tipNull = true
		} else {
			share := max(0, m.tipping+0.03*float64(r.label)+0.04*g.rng.NormFloat64())
			r.tip = math.Round(float64(r.fareCents)*share) / 100
		}
	}
	return rides
}

// batch turns one day's rides into an Arrow record batch, assigning ride ids.
func (g *ridesGen) batch(mem memory.Allocator, sc *arrow.Schema, rides []ride) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for _, fb := range b.Fields() {
		fb.Reserve(len(rides))
	}
	ids := b.Field(0).(*array.Int64Builder)
	at := b.Field(1).(*array.TimestampBuilder)
	city := b.Field(2).(*array.StringBuilder)
	pass := b.Field(3).(*array.Int32Builder)
	dist := b.Field(4).(*array.Float64Builder)
	fare := b.Field(5).(*array.Decimal128Builder)
	tip := b.Field(6).(*array.Float64Builder)
	label := b.Field(13).(*array.Int32Builder)
	for _, r := range rides {
		ids.Append(g.nextID)
		g.nextID++
		at.Append(arrow.Timestamp(r.at))
		city.Append(r.city)
		pass.Append(r.passengers)
		dist.Append(r.distance)
		fare.Append(decimal128.FromI64(r.fareCents))
		if r.tipNull {
			tip.AppendNull()
		} else {
			tip.Append(r.tip)
		}
		for j := range 6 {
			b.Field(7 + j).(*array.Float32Builder).Append(r.f[j])
		}
		label.Append(r.label)
	}
	return b.NewRecordBatch()
}
