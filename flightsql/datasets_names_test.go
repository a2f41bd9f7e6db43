package flightsql

import (
	"fmt"
	"testing"

	"github.com/cachedb/cachedb/engine"
)

// A dataset named like an Iceberg table of the default namespace (dataset "rides" beside
// demo.rides): the unqualified name is the dataset, at its generation, on the head and on every
// data node; the qualified name is the table. Small (one partition, so one node holds it and the
// head answers) and large (partitions on every node, which answer together).
func TestDatasetNamedLikeAnIcebergTable(t *testing.T) {
	wh := demoWarehouse(t)
	c := startDatasetCluster(t, wh, 2)
	ctx := testContext(t)
	cnxn := quietConn(t, c.head.addr)
	for _, spec := range []engine.DatasetSpec{
		{Name: "rides", Table: "demo.rides", Columns: []string{"ride_id", "city"}, Filter: "ride_id <= 1000", Partitions: 1},
		{Name: "rides", Table: "demo.rides", Columns: []string{"ride_id", "city"}, Filter: "ride_id <= 150000", Partitions: 4, Replace: true},
	} {
		ds := mustLoad(t, ctx, flightClient(t, c.head.addr), spec)
		n := fmt.Sprint(ds.Rows)
		for _, tt := range []struct{ query, want string }{
			{"SELECT count(*) FROM rides", n},
			{"SELECT count(*) FROM demo.rides", "200000"},
			{"SELECT count(*) FROM (SELECT city, count(*) FROM rides GROUP BY city) g", "8"},
			{"SELECT count(DISTINCT ride_id) FROM rides WHERE city <> ''", n},
			{"SELECT count(*) FROM rides r JOIN demo.rides d ON r.ride_id = d.ride_id", n},
		} {
			got, err := tryQuery(ctx, cnxn, tt.query)
			if err != nil {
				t.Errorf("%d partitions: %s: %v", spec.Partitions, tt.query, err)
				continue
			}
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("%d partitions: %s = %v, want %s", spec.Partitions, tt.query, got, tt.want)
			}
		}
	}
}
