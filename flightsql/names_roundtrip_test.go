package flightsql

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/cachedb/cachedb/engine"
)

// Every table GetTables lists can be queried under the names its catalog, schema and table
// spell: catalog.schema.table bare or quoted part by part, `catalog.schema`.table, and
// catalog.table (public.table for the engine's own catalog); errors about a dataset name it as
// the client wrote it, never by its internal generation.
func TestListedTableNamesWorkInQueries(t *testing.T) {
	wh := demoWarehouse(t)
	c := startDatasetCluster(t, wh, 2)
	ctx := testContext(t)
	cnxn := quietConn(t, c.head.addr)
	mustLoad(t, ctx, flightClient(t, c.head.addr), engine.DatasetSpec{Name: "lisbon_rides", Table: "demo.rides", Columns: []string{"ride_id", "city"}, Filter: "city = 'Lisbon'", Partitions: 2})

	rdr, err := cnxn.GetObjects(ctx, adbc.ObjectDepthTables, nil, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed [][3]string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		cats := rec.Column(0).(*array.String)
		schemas := rec.Column(1).(*array.List)
		sv := schemas.ListValues().(*array.Struct)
		for r := 0; r < int(rec.NumRows()); r++ {
			s0, s1 := schemas.ValueOffsets(r)
			for s := s0; s < s1; s++ {
				sname := sv.Field(0).(*array.String).Value(int(s))
				tl := sv.Field(1).(*array.List)
				tv := tl.ListValues().(*array.Struct)
				t0, t1 := tl.ValueOffsets(int(s))
				for tt := t0; tt < t1; tt++ {
					listed = append(listed, [3]string{cats.Value(r), sname, tv.Field(0).(*array.String).Value(int(tt))})
				}
			}
		}
	}
	rdr.Release()
	found := map[string]bool{}
	for _, l := range listed {
		cat, schema, table := l[0], l[1], l[2]
		found[cat+"."+schema+"."+table] = true
		names := []string{
			cat + "." + schema + "." + table,
			fmt.Sprintf("`%s`.`%s`.`%s`", cat, schema, table),
			fmt.Sprintf("`%s.%s`.`%s`", cat, schema, table),
		}
		if schema == "public" {
			names = append(names, cat+"."+table)
		}
		for _, name := range names {
			if _, err := tryQuery(ctx, cnxn, "SELECT * FROM "+name+" LIMIT 1"); err != nil {
				t.Errorf("listed as %s.%s.%s, but SELECT * FROM %s: %v", cat, schema, table, name, err)
			}
		}
	}
	for _, want := range []string{"cachedb.public.lisbon_rides", "lake.demo.rides", "system.public.datasets"} {
		if !found[want] {
			t.Errorf("GetObjects does not list %s: %v", want, listed)
		}
	}
	rows, err := tryQuery(ctx, cnxn, "SELECT count(*) FROM cachedb.public.lisbon_rides r JOIN public.lisbon_rides p ON r.ride_id = p.ride_id")
	if err != nil || len(rows) != 1 || rows[0] == "0" {
		t.Errorf("join of two spellings of one dataset: %v, %v", rows, err)
	}
	for _, q := range []string{
		"SELECT nope FROM cachedb.lisbon_rides",
		"SELECT nope FROM cachedb.public.lisbon_rides",
		"SELECT * FROM cachedb.public.lisbon_ridez",
	} {
		_, err := tryQuery(ctx, cnxn, q)
		if err == nil {
			t.Errorf("%s succeeded", q)
		} else if strings.Contains(err.Error(), "@") {
			t.Errorf("%s: error leaks an internal name: %v", q, err)
		}
	}
}
