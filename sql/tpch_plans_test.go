package sql

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/exec"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/planner"
)

// TestTPCHJoinOrders pins the join order the optimizer chooses for the TPC-H queries with the
// most joins, over tables whose statistics are those catalog/iceberg reads from the manifests
// of the benchmark's scale factor 1 tables (bench/tpch): row counts and value bounds, no
// distinct counts. A join is written (probe ⋈ build); the right side of each join is the one
// its hash table is built on.
func TestTPCHJoinOrders(t *testing.T) {
	cat := tpchStatsCatalog(t)
	cases := map[string]string{
		// Customers of the region's nations, their orders of the year, those orders' lines,
		// and last the suppliers (on both supplier and nation keys); written order joined
		// customers with the region's suppliers on the nation key first (12 million rows).
		"q05": "((lineitem ⋈ (orders ⋈ (customer ⋈ (nation ⋈ region)))) ⋈ supplier)",
		// The OR over both nations narrows each to two rows; lines of their suppliers meet
		// orders of their customers.
		"q07": "((lineitem ⋈ (supplier ⋈ n1)) ⋈ (orders ⋈ (customer ⋈ n2)))",
		"q08": "(((lineitem ⋈ (orders ⋈ (customer ⋈ (n1 ⋈ region)))) ⋈ part) ⋈ (supplier ⋈ n2))",
		// lineitem meets partsupp on its composite key (one row each), after the filtered part.
		"q09": "(orders ⋈ (lineitem ⋈ ((partsupp ⋈ part) ⋈ (supplier ⋈ nation))))",
		// The decorrelated AVG subquery (lineitem grouped by part, 200 k groups) is joined with
		// the lines of the few wanted parts, which are hashed.
		"q17": "(lineitem ⋈ (lineitem ⋈ part))",
		// The decorrelated SUM subquery (a year of lineitem grouped by part and supplier) meets
		// the partsupp rows of forest parts, which are hashed.
		"q20": "((supplier ⋈ nation) ⋉ (lineitem ⋈ (partsupp ⋉ part)))",
		// The IN subquery, a semi join, filters orders before they meet lineitem.
		"q18": "(lineitem ⋈ ((orders ⋉ lineitem) ⋈ customer))",
		// The EXISTS and NOT EXISTS subqueries become a semi and an anti join, above the
		// cluster: it leaves fewer lines than l1 has.
		"q21": "((((l1 ⋈ (supplier ⋈ nation)) ⋈ orders) ⋉ l2) ▷ l3)",
		// The decorrelated MIN subquery's own joins are ordered too: its suppliers of the
		// region's nations before partsupp, not partsupp's 800 k rows through every join.
		"q02": "((partsupp ⋈ (supplier ⋈ (nation ⋈ region))) ⋈ ((supplier ⋈ (partsupp ⋈ part)) ⋈ (nation ⋈ region)))",
		// The uncorrelated scalar subqueries (one row: an aggregate without GROUP BY) are
		// joined as plans, their own joins ordered, rather than run inside the filter's
		// expression: Q15's max revenue meets the revenues before the suppliers do.
		"q11": "((partsupp ⋈ (supplier ⋈ nation)) ⋈ (partsupp ⋈ (supplier ⋈ nation)))",
		"q15": "(supplier ⋈ (lineitem ⋈ lineitem))",
		"q22": "((customer ⋈ customer) ▷ orders)",
	}
	for _, q := range sortedKeys(cases) {
		stmt := bindTPCH(t, cat, q)
		p := planner.Optimize(stmt.(*planner.Query).Plan)
		if got := joinOrder(p); got != cases[q] {
			t.Errorf("%s: join order\n got %s\nwant %s\nplan:\n%s", q, got, cases[q], planner.Format(p))
		}
	}
}

// TestTPCHReducedAggregates pins where PlanQuery narrows a grouped aggregate's input by the
// selective scan it is joined with (planner.ReduceGroupedJoins), under the scale factor 1
// statistics: the decorrelated subqueries of Q2, Q17 and Q20 group only the rows of the wanted
// parts; no other query changes.
func TestTPCHReducedAggregates(t *testing.T) {
	cat := tpchStatsCatalog(t)
	want := map[string]string{
		// The lowest supply cost per part, only for the 747 parts of size 15 and type BRASS.
		"q02": "(((partsupp ⋉ part) ⋈ (supplier ⋈ (nation ⋈ region))) ⋈ ((supplier ⋈ (partsupp ⋈ part)) ⋈ (nation ⋈ region)))",
		// The average quantity per part, only for the parts of one brand and container.
		"q17": "(lineitem ⋈ ((lineitem ⋉ part) ⋈ part))",
		// A year's quantity per part and supplier, only for forest parts.
		"q20": "((supplier ⋈ nation) ⋉ ((lineitem ⋉ part) ⋈ (partsupp ⋉ part)))",
	}
	for i := 1; i <= 22; i++ {
		q := fmt.Sprintf("q%02d", i)
		stmt := bindTPCH(t, cat, q)
		p := planner.Optimize(stmt.(*planner.Query).Plan)
		reduced := planner.ReduceGroupedJoins(context.Background(), p)
		// Over data nodes the parts are few enough to broadcast to the semi joins, so the same
		// aggregates are narrowed.
		if onNodes := planner.ReduceGroupedJoinsOnNodes(context.Background(), p, 2); planner.Format(onNodes) != planner.Format(reduced) {
			t.Errorf("%s: reduced over 2 data nodes as %s, in one process as %s", q, joinOrder(onNodes), joinOrder(reduced))
		}
		before, after := joinOrder(p), joinOrder(reduced)
		if w, ok := want[q]; ok {
			if after != w {
				t.Errorf("%s: reduced join order\n got %s\nwant %s\nplan:\n%s", q, after, w, planner.Format(reduced))
			}
		} else if planner.Format(reduced) != planner.Format(p) {
			t.Errorf("%s: plan changed: %s → %s", q, before, after)
		}
	}
}

// TestTPCHSemiJoinBuildSides pins which side each semi and anti hash join of the TPC-H queries
// hashes, under the scale factor 1 statistics: the left (preserved) side where the estimates put
// it at most half the subquery's rows, else the right side. Joins are listed as the physical plan
// meets them, outermost first.
func TestTPCHSemiJoinBuildSides(t *testing.T) {
	cat := tpchStatsCatalog(t)
	cases := map[string]string{
		// Orders of one quarter (57 k estimated) against every late line: the orders are hashed.
		"q04": "semi build=left",
		// Parts of the wanted brands, types and sizes against the few complaining suppliers.
		"q16": "null-aware anti",
		// Orders against the large-quantity orders (an aggregate of lineitem, estimated larger).
		"q18": "semi",
		// Suppliers of one nation (1000 estimated) against the few partsupp rows of forest parts
		// with enough stock (11 estimated); partsupp against the forest parts.
		"q20": "semi, semi",
		// The lines of late suppliers of one nation against all of lineitem, twice.
		"q21": "anti build=left, semi build=left",
		// The customers with a wanted phone prefix and balance against every order.
		"q22": "anti build=left",
	}
	for _, q := range sortedKeys(cases) {
		stmt := bindTPCH(t, cat, q)
		op, err := planner.Physical(planner.Optimize(stmt.(*planner.Query).Plan), planner.PhysicalOptions{})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got := strings.Join(semiJoins(op, nil), ", "); got != cases[q] {
			t.Errorf("%s: semi and anti joins\n got %s\nwant %s\nplan:\n%s", q, got, cases[q], exec.FormatPlan(op))
		}
	}
}

// semiJoins appends the kind and build side of the semi and anti hash joins of op, pre-order.
func semiJoins(op exec.Operator, out []string) []string {
	s := op.String()
	if rest, ok := strings.CutPrefix(s, "HashJoin: "); ok {
		kind, _, _ := strings.Cut(rest, " on ")
		if strings.Contains(kind, "semi") || strings.Contains(kind, "anti") {
			out = append(out, kind)
		}
	}
	for _, k := range op.Children() {
		out = semiJoins(k, out)
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// joinOrder renders the joins of p: relations by alias, (left ⋈ right) for inner joins, ⋉ semi,
// ▷ anti, ⟕ left, × cross; other operators are looked through.
func joinOrder(p planner.Plan) string {
	switch n := p.(type) {
	case *planner.Scan:
		return n.Alias
	case *planner.Join:
		op := map[planner.JoinKind]string{planner.InnerJoin: "⋈", planner.LeftJoin: "⟕", planner.CrossJoin: "×",
			planner.SemiJoin: "⋉", planner.AntiJoin: "▷", planner.NullAwareAntiJoin: "▷"}[n.Kind]
		return "(" + joinOrder(n.Left) + " " + op + " " + joinOrder(n.Right) + ")"
	}
	var parts []string
	for _, k := range p.Children() {
		parts = append(parts, joinOrder(k))
	}
	return strings.Join(parts, ", ")
}

// statsTable is a table known only by its schema and statistics; it holds no rows.
type statsTable struct {
	name   string
	schema *arrow.Schema
	stats  catalog.Statistics
}

func (t *statsTable) Name() string          { return t.name }
func (t *statsTable) Schema() *arrow.Schema { return t.schema }

// Scan plans no task: physical plans can be built, not run.
func (t *statsTable) Scan(context.Context, catalog.ScanRequest) (*catalog.ScanPlan, error) {
	return &catalog.ScanPlan{}, nil
}
func (t *statsTable) Statistics(context.Context) (catalog.Statistics, error) { return t.stats, nil }

type statsCatalog map[string]*statsTable

func (c statsCatalog) Name() string { return "tpch" }
func (c statsCatalog) Table(_ context.Context, name string) (catalog.Table, error) {
	if t, ok := c[strings.ToLower(name)]; ok {
		return t, nil
	}
	return nil, errs.NotFoundf("no table %s", name)
}
func (c statsCatalog) TableNames(context.Context) ([]string, error) {
	var out []string
	for n := range c {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// tpchStatsCatalog holds the eight TPC-H tables with the statistics of scale factor 1.
func tpchStatsCatalog(t *testing.T) statsCatalog {
	type col struct{ name, typ, min, max string }
	tables := map[string]struct {
		rows int64
		cols []col
	}{
		"region": {rows: 5, cols: []col{
			{"r_regionkey", "int64", "0", "4"},
			{"r_name", "utf8", "AFRICA", "MIDDLE EAST"},
			{"r_comment", "utf8", "ges. thinly even", "uickly special b"},
		}},
		"nation": {rows: 25, cols: []col{
			{"n_nationkey", "int64", "0", "24"},
			{"n_name", "utf8", "ALGERIA", "VIETNAM"},
			{"n_regionkey", "int64", "0", "4"},
			{"n_comment", "utf8", " haggle. careful", "y final packaget"},
		}},
		"supplier": {rows: 10000, cols: []col{
			{"s_suppkey", "int64", "1", "10000"},
			{"s_name", "utf8", "Supplier#0000000", "Supplier#0000101"},
			{"s_address", "utf8", "  9aW1wwnBJJPnCx", "zzfDhdtZcvmVzA8s"},
			{"s_nationkey", "int64", "0", "24"},
			{"s_phone", "utf8", "10-102-116-6785", "34-998-900-4911"},
			{"s_acctbal", "decimal(15, 2)", "-998.22", "9999.72"},
			{"s_comment", "utf8", " about the blith", "zzle furiously.!"},
		}},
		"customer": {rows: 150000, cols: []col{
			{"c_custkey", "int64", "1", "150000"},
			{"c_name", "utf8", "Customer#0000000", "Customer#0001501"},
			{"c_address", "utf8", "   2uZwVhQvwA", "zzxGktzXTMKS1Bx["},
			{"c_nationkey", "int64", "0", "24"},
			{"c_phone", "utf8", "10-100-106-1617", "34-999-618-6881"},
			{"c_acctbal", "decimal(15, 2)", "-999.99", "9999.99"},
			{"c_mktsegment", "utf8", "AUTOMOBILE", "MACHINERY"},
			{"c_comment", "utf8", " Tiresias accord", "zzle. blithely s"},
		}},
		"part": {rows: 200000, cols: []col{
			{"p_partkey", "int64", "1", "200000"},
			{"p_name", "utf8", "almond antique b", "yellow white seb"},
			{"p_mfgr", "utf8", "Manufacturer#1", "Manufacturer#5"},
			{"p_brand", "utf8", "Brand#11", "Brand#55"},
			{"p_type", "utf8", "ECONOMY ANODIZED", "STANDARD POLISHF"},
			{"p_size", "int32", "1", "50"},
			{"p_container", "utf8", "JUMBO BAG", "WRAP PKG"},
			{"p_retailprice", "decimal(15, 2)", "901", "2098.99"},
			{"p_comment", "utf8", " Tire", "zzle. quickly si"},
		}},
		"partsupp": {rows: 800000, cols: []col{
			{"ps_partkey", "int64", "1", "200000"},
			{"ps_suppkey", "int64", "1", "10000"},
			{"ps_availqty", "int32", "1", "9999"},
			{"ps_supplycost", "decimal(15, 2)", "1", "1000"},
			{"ps_comment", "utf8", " Tiresias accord", "zzle. unusual df"},
		}},
		"orders": {rows: 1500000, cols: []col{
			{"o_orderkey", "int64", "1", "6000000"},
			{"o_custkey", "int64", "1", "149999"},
			{"o_orderstatus", "utf8", "F", "P"},
			{"o_totalprice", "decimal(15, 2)", "857.71", "555285.16"},
			{"o_orderdate", "date32", "1992-01-01", "1998-08-02"},
			{"o_orderpriority", "utf8", "1-URGENT", "5-LOW"},
			{"o_clerk", "utf8", "Clerk#000000001", "Clerk#000001000"},
			{"o_shippriority", "int32", "0", "0"},
			{"o_comment", "utf8", " Tiresias about ", "zzle? furiously!"},
		}},
		"lineitem": {rows: 6001215, cols: []col{
			{"l_orderkey", "int64", "1", "6000000"},
			{"l_partkey", "int64", "1", "200000"},
			{"l_suppkey", "int64", "1", "10000"},
			{"l_linenumber", "int32", "1", "7"},
			{"l_quantity", "decimal(15, 2)", "1", "50"},
			{"l_extendedprice", "decimal(15, 2)", "901", "104949.5"},
			{"l_discount", "decimal(15, 2)", "0", "0.1"},
			{"l_tax", "decimal(15, 2)", "0", "0.08"},
			{"l_returnflag", "utf8", "A", "R"},
			{"l_linestatus", "utf8", "F", "O"},
			{"l_shipdate", "date32", "1992-01-02", "1998-12-01"},
			{"l_commitdate", "date32", "1992-01-31", "1998-10-31"},
			{"l_receiptdate", "date32", "1992-01-04", "1998-12-31"},
			{"l_shipinstruct", "utf8", "COLLECT COD", "TAKE BACK RETURN"},
			{"l_shipmode", "utf8", "AIR", "TRUCK"},
			{"l_comment", "utf8", " Tiresias ", "zzle? slyly finb"},
		}},
	}
	cat := statsCatalog{}
	for name, tb := range tables {
		st := &statsTable{name: name, stats: catalog.Statistics{Rows: tb.rows}}
		var fields []arrow.Field
		for _, c := range tb.cols {
			dt := map[string]arrow.DataType{"int64": arrow.PrimitiveTypes.Int64, "int32": arrow.PrimitiveTypes.Int32,
				"utf8": arrow.BinaryTypes.String, "date32": arrow.FixedWidthTypes.Date32,
				"decimal(15, 2)": &arrow.Decimal128Type{Precision: 15, Scale: 2}}[c.typ]
			fields = append(fields, arrow.Field{Name: c.name, Type: dt})
			st.stats.Columns = append(st.stats.Columns, catalog.ColumnStatistics{
				Distinct: -1, Nulls: 0, Min: statsScalar(t, dt, c.min), Max: statsScalar(t, dt, c.max)})
		}
		st.schema = arrow.NewSchema(fields, nil)
		cat[name] = st
	}
	return cat
}

func statsScalar(t *testing.T, dt arrow.DataType, v string) scalar.Scalar {
	t.Helper()
	var (
		s   scalar.Scalar
		err error
	)
	switch dt := dt.(type) {
	case *arrow.Int64Type:
		var n int64
		n, err = strconv.ParseInt(v, 10, 64)
		s = scalar.NewInt64Scalar(n)
	case *arrow.Int32Type:
		var n int64
		n, err = strconv.ParseInt(v, 10, 32)
		s = scalar.NewInt32Scalar(int32(n))
	case *arrow.StringType:
		s = scalar.NewStringScalar(v)
	case *arrow.Date32Type:
		var d time.Time
		d, err = time.Parse("2006-01-02", v)
		s = scalar.NewDate32Scalar(arrow.Date32FromTime(d))
	case *arrow.Decimal128Type:
		var n decimal128.Num
		n, err = decimal128.FromString(v, dt.Precision, dt.Scale)
		s = scalar.NewDecimal128Scalar(n, dt)
	}
	if err != nil || s == nil {
		t.Fatalf("statistics value %q of %s: %v", v, dt, err)
	}
	return s
}

// bindTPCH binds the standard text of TPC-H query q (bench/tpch/queries/qNN.sql) over cat.
func bindTPCH(t *testing.T, cat catalog.Catalog, q string) planner.Statement {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "bench", "tpch", "queries", q+".sql"))
	if err != nil {
		t.Fatal(err)
	}
	stmt, err := Bind(context.Background(), string(text), cat, nil)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return stmt
}
