package flightsql

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/cachedb/cachedb/catalog"
	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/engine"
)

// A head offered no data node runs a query over source tables itself (placing it is skipped,
// as it would place nothing), while a query over a dataset whose partition a data node holds
// still fails as unavailable rather than being read as if the head held it.
func TestHeadWithoutDataNodes(t *testing.T) {
	wh := demoWarehouse(t)
	mem := memcat.NewCatalog("cachedb")
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	held := memcat.NewDataset("held", 1, schema, 1)
	if err := held.SetPart(0, memcat.Part{Rows: 3, Bytes: 24, Location: "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.AttachDataset(held, false); err != nil {
		t.Fatal(err)
	}
	head := startServer(t, engine.Config{NoDemo: true, Sources: []catalog.Catalog{openLake(t, wh)}, DefaultCatalog: "lake", Memory: mem},
		Options{DataNodes: func() []string { return nil }})
	conn := head.sessionConn(t)
	if _, rows := adbcQuery(t, conn, "SELECT count(*) FROM demo.rides"); len(rows) != 1 || rows[0] == "0" {
		t.Errorf("count(*) of demo.rides on a head without data nodes = %v", rows)
	}
	_, err := firstValue(t, conn, "SELECT count(*) FROM held")
	if err == nil || !strings.Contains(err.Error(), "no data node is alive") {
		t.Errorf("a dataset held by a data node, read with none alive: %v", err)
	}
}
