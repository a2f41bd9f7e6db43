package flightsql

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/engine"
)

// A dataset of one partition, held by one of two data nodes, still divides a query among the
// nodes: the node holding none of it learns its shape from the stage, plans the query as the
// head did and takes its share of the other stages (here the join with an Iceberg table, whose
// tasks both nodes read, with the small dataset broadcast to both), instead of the head reading
// everything itself.
func TestSmallDatasetDividesAmongDataNodes(t *testing.T) {
	wh := demoWarehouse(t)
	c := startDatasetCluster(t, wh, 2)
	ctx := testContext(t)
	cnxn := quietConn(t, c.head.addr)
	ds := mustLoad(t, ctx, flightClient(t, c.head.addr), engine.DatasetSpec{
		Name: "few", Table: "demo.rides", Columns: []string{"ride_id", "city"}, Filter: "ride_id <= 1000", Partitions: 1})
	query := "SELECT count(*) FROM few f JOIN demo.rides d ON f.ride_id = d.ride_id WHERE d.fare >= 0"
	_, want := adbcQuery(t, cnxn, "SELECT count(*) FROM few f JOIN (SELECT * FROM demo.rides LIMIT 1000000) d ON f.ride_id = d.ride_id WHERE d.fare >= 0")
	for _, q := range []string{query, "SELECT count(*) FROM few"} {
		_, rows := adbcQuery(t, cnxn, "EXPLAIN ANALYZE "+q)
		text := strings.Join(rows, "\n")
		if !strings.Contains(text, "2 data nodes") || !strings.Contains(text, "Scan: few") {
			t.Errorf("EXPLAIN ANALYZE %s did not run over the 2 data nodes:\n%s", q, text)
		}
		// The small dataset is the broadcast side of the join: the table's rows stay where
		// they are read.
		if q == query && (!strings.Contains(text, "broadcast to 2 data nodes") || strings.Contains(text, "hash(")) {
			t.Errorf("EXPLAIN ANALYZE %s did not broadcast the dataset, or shuffled by hash:\n%s", q, text)
		}
	}
	if _, got := adbcQuery(t, cnxn, query); len(got) != 1 || len(want) != 1 || got[0] != want[0] {
		t.Errorf("%s = %v, want %v", query, got, want)
	}
	if _, got := adbcQuery(t, cnxn, "SELECT count(*) FROM few"); len(got) != 1 || got[0] != fmt.Sprint(ds.Rows) {
		t.Errorf("count(*) of the dataset = %v, want %d", got, ds.Rows)
	}
}
