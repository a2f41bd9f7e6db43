package flightsql

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	memcat "github.com/cachedb/cachedb/catalog/memory"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
)

// datasetIngestOpts is ingestOpts into the schema of datasets.
func datasetIngestOpts(table, mode string) *flightsql.ExecuteIngestOpts {
	o := ingestOpts(table, mode)
	schema := "datasets"
	o.Schema = &schema
	return o
}

// featureBatches are n batches of rows rows each: id (int64, numbering the rows from first),
// f (float32, id / 4) and tag (string).
func featureBatches(t *testing.T, first, n, rows int) []arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32},
		{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	var out []arrow.RecordBatch
	for b := range n {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for r := range rows {
			id := first + b*rows + r
			bld.Field(0).(*array.Int64Builder).Append(int64(id))
			bld.Field(1).(*array.Float32Builder).Append(float32(id) / 4)
			if id%5 == 0 {
				bld.Field(2).(*array.StringBuilder).AppendNull()
			} else {
				bld.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("t%d", id%7))
			}
		}
		rec := bld.NewRecordBatch()
		bld.Release()
		t.Cleanup(rec.Release)
		out = append(out, rec)
	}
	return out
}

// TestIngestIntoADatasetOnDataNodes: a bulk ingest into schema "datasets" makes a dataset held
// by the data nodes, read by SQL where it is held, listed by metadata and system.datasets, in
// every mode, all or nothing; when the node holding a partition's only copy is lost, the
// dataset is lost, and reads say so.
func TestIngestIntoADatasetOnDataNodes(t *testing.T) {
	c := startDatasetCluster(t, demoWarehouse(t), 2)
	ctx := testContext(t)
	cl, err := newFlightsqlClient(c.head.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cnxn := quietConn(t, c.head.addr)
	query := func(q string) string {
		t.Helper()
		rows, err := tryQuery(ctx, cnxn, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return strings.Join(rows, ";")
	}

	// 12 batches of 500 rows: 8 partitions (4 per node), of whole batches.
	batches := featureBatches(t, 0, 12, 500)
	if n, err := ingest(ctx, cl, datasetIngestOpts("feats", "create"), batches...); err != nil || n != 6000 {
		t.Fatalf("create: %d rows, %v", n, err)
	}
	row := systemDatasets(t, cnxn)["feats"]
	if row.state != "ready" || row.rows != 6000 || row.partitions != 8 || len(row.nodes) != 2 || row.source != "bulk ingest (create)" {
		t.Fatalf("system.datasets: %+v", row)
	}
	held := heldPartitions(c, "feats", row.gen)
	if len(held["node-0"])+len(held["node-1"]) != 8 || len(held["node-0"]) == 0 || len(held["node-1"]) == 0 {
		t.Errorf("partitions held: %v", held)
	}
	// The float32 column is held as sent, and SQL reads it widened, as a dataset's stored column.
	ds, _ := c.nodes[0].eng.MemoryCatalog().Dataset("feats")
	if got := ds.Schema().Field(1).Type; !arrow.TypeEqual(got, arrow.PrimitiveTypes.Float32) {
		t.Errorf("held type of f: %s", got)
	}
	for _, name := range []string{"feats", "datasets.feats", "cachedb.datasets.feats"} {
		if got := query("SELECT count(*), sum(id), sum(f), count(tag) FROM " + name); got != "6000|17997000|4.49925e+06|4800" {
			t.Errorf("%s aggregates: %s", name, got)
		}
	}
	if got := query("SELECT tag, count(*) FROM feats WHERE id >= 5990 GROUP BY tag ORDER BY tag"); got != "NULL|2;t0|2;t1|1;t2|1;t4|1;t5|1;t6|2" {
		t.Errorf("grouped: %s", got)
	}
	// Metadata lists it in the schema of datasets, where pandas' has_table looks.
	info, err := cl.GetTables(ctx, &flightsql.GetTablesOpts{DbSchemaFilterPattern: ptr("datasets"), TableNameFilterPattern: ptr("feats")})
	if err != nil {
		t.Fatal(err)
	}
	if _, rows := readInfo(t, cl, info); len(rows) != 1 || !strings.HasPrefix(rows[0], "cachedb,datasets,feats,") {
		t.Errorf("GetTables in schema datasets: %v", rows)
	}

	// Modes.
	_, err = ingest(ctx, cl, datasetIngestOpts("feats", "create"), batches[0])
	wantCode(t, "create over a dataset", err, codes.AlreadyExists, "Dataset 'feats' already exists")
	_, err = ingest(ctx, cl, datasetIngestOpts("nope", "append"), batches[0])
	wantCode(t, "append to no dataset", err, codes.NotFound, "Dataset 'nope' doesn't exist")
	if n, err := ingest(ctx, cl, datasetIngestOpts("feats", "append"), featureBatches(t, 6000, 2, 500)...); err != nil || n != 1000 {
		t.Fatalf("append: %d, %v", n, err)
	}
	appended := systemDatasets(t, cnxn)["feats"]
	if appended.rows != 7000 || appended.gen <= row.gen || appended.source != "bulk ingest (append)" {
		t.Errorf("after append: %+v", appended)
	}
	if got := query("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM feats"); got != "7000|7000|0|6999" {
		t.Errorf("after append: %s", got)
	}
	waitFor(t, "the nodes to drop the appended-to generation", func() bool { return len(heldPartitions(c, "feats", row.gen)) == 0 })
	// An append takes the dataset's columns in their types, in any order; a missing one is NULL.
	other := arrow.NewSchema([]arrow.Field{{Name: "TAG", Type: arrow.BinaryTypes.String}, {Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if _, err := ingest(ctx, cl, datasetIngestOpts("feats", "append"), ingestBatch(t, other, `[{"TAG": "late", "id": -1}]`)); err != nil {
		t.Fatalf("append without f: %v", err)
	}
	if got := query("SELECT id, f, tag FROM feats WHERE id < 0"); got != "-1|NULL|late" {
		t.Errorf("appended row: %s", got)
	}
	wide := arrow.NewSchema([]arrow.Field{{Name: "f", Type: arrow.PrimitiveTypes.Float64}}, nil)
	_, err = ingest(ctx, cl, datasetIngestOpts("feats", "append"), ingestBatch(t, wide, `[{"f": 1.5}]`))
	wantCode(t, "append of another type", err, codes.InvalidArgument, "column 'f' of dataset 'feats' is held as float")

	// All or nothing: a value that does not convert leaves the dataset as it was.
	bad := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Uint64}}, nil)
	_, err = ingest(ctx, cl, datasetIngestOpts("feats", "replace"), ingestBatch(t, bad, `[{"n": 1}]`), ingestBatch(t, bad, `[{"n": 18446744073709551615}]`))
	wantCode(t, "replace with a bad value", err, codes.InvalidArgument, "Out of range value for column 'n' at row 2")
	_, err = ingest(ctx, cl, datasetIngestOpts("fresh", "create"), ingestBatch(t, bad, `[{"n": 18446744073709551615}]`))
	wantCode(t, "create with a bad value", err, codes.InvalidArgument, "Out of range")
	if got := query("SELECT count(*) FROM feats"); got != "7001" {
		t.Errorf("after a failed replace: %s rows", got)
	}
	if _, ok := systemDatasets(t, cnxn)["fresh"]; ok {
		t.Error("a failed create left a dataset")
	}

	// Replace takes the new data's schema; create_append creates, then appends.
	xs := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}}, nil)
	if n, err := ingest(ctx, cl, datasetIngestOpts("feats", "replace"), ingestBatch(t, xs, `[{"x": 7}, {"x": 8}]`)); err != nil || n != 2 {
		t.Fatalf("replace: %d, %v", n, err)
	}
	if got := query("SELECT * FROM feats ORDER BY x"); got != "7;8" {
		t.Errorf("after replace: %s", got)
	}
	for i, want := range []string{"2", "4"} {
		if _, err := ingest(ctx, cl, datasetIngestOpts("ca", "create_append"), ingestBatch(t, xs, `[{"x": 1}, {"x": 2}]`)); err != nil {
			t.Fatalf("create_append %d: %v", i, err)
		}
		if got := query("SELECT count(*) FROM ca"); got != want {
			t.Errorf("create_append %d: %s rows", i, got)
		}
	}
	// A memory table's name is not a dataset's, and a plain ingest does not write a dataset.
	if _, err := ingest(ctx, cl, ingestOpts("mem", "create"), ingestBatch(t, xs, `[{"x": 1}]`)); err != nil {
		t.Fatal(err)
	}
	_, err = ingest(ctx, cl, datasetIngestOpts("mem", "create"), ingestBatch(t, xs, `[{"x": 1}]`))
	wantCode(t, "a dataset named like a memory table", err, codes.AlreadyExists, "memory table")
	_, err = ingest(ctx, cl, ingestOpts("ca", "append"), ingestBatch(t, xs, `[{"x": 1}]`))
	wantCode(t, "a plain ingest into a dataset", err, codes.Unimplemented, "schema datasets")
	if _, err := tryQuery(ctx, cnxn, "SELECT * FROM datasets.mem"); grpcCode(err) != codes.NotFound {
		t.Errorf("datasets.mem names no dataset: %v", err)
	}
	if _, err := tryQuery(ctx, cnxn, "DROP TABLE datasets.ca"); err != nil {
		t.Fatalf("DROP TABLE datasets.ca: %v", err)
	}
	if _, ok := systemDatasets(t, cnxn)["ca"]; ok {
		t.Error("DROP TABLE datasets.ca left the dataset")
	}
	if _, err := tryQuery(ctx, cnxn, "DROP TABLE datasets.mem"); grpcCode(err) != codes.NotFound {
		t.Errorf("DROP TABLE datasets.mem: %v, want NotFound (a memory table is not a dataset)", err)
	}

	// A node holding partitions is lost: their only copy is gone, and the dataset with them.
	if n, err := ingest(ctx, cl, datasetIngestOpts("feats", "replace"), batches...); err != nil || n != 6000 {
		t.Fatalf("replace: %d, %v", n, err)
	}
	lostNode := c.nodes[1]
	lostHeld := heldPartitions(c, "feats", systemDatasets(t, cnxn)["feats"].gen)[lostNode.id]
	if len(lostHeld) == 0 {
		t.Fatalf("node %s holds no partition of feats", lostNode.id)
	}
	lostNode.stop()
	waitFor(t, "the head to find the node lost", func() bool { return nodeState(t, cnxn, lostNode.id) == "lost" })
	if got := systemDatasets(t, cnxn)["feats"]; got.state != "lost" {
		t.Errorf("state after the loss: %+v", got)
	}
	_, err = tryQuery(ctx, cnxn, "SELECT count(*) FROM feats")
	if grpcCode(err) != codes.DataLoss || !strings.Contains(err.Error(), fmt.Sprintf("partition %d was held only by data node %s, which was lost", lostHeld[0], lostNode.id)) {
		t.Errorf("a read of the lost dataset: %v, want DATA_LOSS naming partition %d and the node", err, lostHeld[0])
	}
	// Datasets that were not on the node still read; the lost one can be dropped and made again.
	if got := query("SELECT count(*) FROM system.datasets WHERE state = 'lost'"); got != "1" {
		t.Errorf("lost datasets: %s", got)
	}
	if _, err := tryQuery(ctx, cnxn, "DROP TABLE feats"); err != nil {
		t.Fatal(err)
	}
	if n, err := ingest(ctx, cl, datasetIngestOpts("feats", "create"), batches...); err != nil || n != 6000 {
		t.Fatalf("create again on the one node left: %d, %v", n, err)
	}
	if got := query("SELECT count(*) FROM feats"); got != "6000" {
		t.Errorf("made again: %s", got)
	}
	if nodes := systemDatasets(t, cnxn)["feats"].nodes; !slices.Equal(nodes, []string{c.nodes[0].id}) {
		t.Errorf("made again on %v", nodes)
	}
}

// Without data nodes, an ingest into schema datasets is refused, naming why.
func TestIngestIntoADatasetNeedsDataNodes(t *testing.T) {
	ts := startServer(t, engine.Config{NoDemo: true}, Options{})
	ctx := testContext(t)
	xs := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	_, err := ingest(ctx, ts.arrowClient(t), datasetIngestOpts("d", "create"), ingestBatch(t, xs, `[{"x": 1}]`))
	wantCode(t, "ingest into a dataset without data nodes", err, codes.Unimplemented, "held by data nodes")
}

func ptr(s string) *string { return &s }

// The head hands an ingested dataset's rows to a data node that requires logins with a store
// call signed with the cluster secret, which passes without a login; a store call signed with
// another secret, or not signed, is refused (UNAUTHENTICATED) and nothing is held.
func TestStoreCallsAreSignedWithTheClusterSecret(t *testing.T) {
	ctx := testContext(t)
	key := ticket.NewKeyring([]byte("cluster secret"), nil)
	addr := startNodeFor(t, engine.Config{NoDemo: true}, key, testUsers(t))
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	parts := [][]arrow.RecordBatch{{ingestBatch(t, schema, `[{"x": 1}, {"x": 2}]`)}, {}}
	registry := func(key *ticket.Keyring) *cluster.Datasets {
		members := cluster.NewMembership(cluster.Config{})
		if _, err := members.Register("node", addr, "boot"); err != nil {
			t.Fatal(err)
		}
		d := cluster.NewDatasets(cluster.DatasetsConfig{Membership: members, Catalog: memcat.NewCatalog("cachedb"), Key: key, Logger: quietLogger})
		t.Cleanup(d.Close)
		return d
	}
	info, err := registry(key).Ingest(ctx, cluster.IngestJob{Name: "d", Schema: schema, Parts: parts}, nil)
	if err != nil || info.Rows != 2 || info.Partitions != 2 || info.State != "ready" {
		t.Fatalf("ingest through a node requiring logins: %+v, %v", info, err)
	}
	_, err = registry(ticket.NewKeyring([]byte("another secret"), nil)).Ingest(ctx, cluster.IngestJob{Name: "e", Schema: schema, Parts: parts}, nil)
	wantStatus(t, "a store call signed with another secret", err, codes.Unauthenticated)

	// Unsigned: a client that sends the request header is refused before anything is read.
	cl := flightClient(t, addr)
	body := base64.RawURLEncoding.EncodeToString([]byte(`{"dataset":"f","generation":1,"partitions":1,"partition":0}`))
	stream, err := cl.DoPut(metadata.AppendToOutgoingContext(ctx, "cachedb-store-request", body))
	if err == nil {
		_, err = stream.Recv()
	}
	wantStatus(t, "an unsigned store call", err, codes.Unauthenticated)
}
