package flightsql

import (
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/engine"
)

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		path    []string
		def     string
		want    pathRead
		wantErr string
	}{
		{path: []string{"0", "4"}, def: "rides", want: pathRead{dataset: "rides", shard: 0, shards: 4}},
		{path: []string{"3", "4"}, def: "rides", want: pathRead{dataset: "rides", shard: 3, shards: 4}},
		{path: []string{"train", "1", "2"}, want: pathRead{dataset: "train", shard: 1, shards: 2}},
		{path: []string{"train"}, want: pathRead{dataset: "train", shard: 0, shards: 1}},
		{path: []string{"0", "4"}, wantErr: "no default one"},
		{path: []string{"4", "4"}, def: "d", wantErr: "shard index 4 is out of range"},
		{path: []string{"-1", "4"}, def: "d", wantErr: "shard index -1 is out of range"},
		{path: []string{"0", "0"}, def: "d", wantErr: "shard count 0 is out of range"},
		{path: []string{"x", "4"}, def: "d", wantErr: `shard index "x" is not an integer`},
		{path: []string{"d", "0", "y"}, wantErr: `shard count "y" is not an integer`},
		{path: nil, wantErr: "1 to 3 elements"},
		{path: []string{"a", "b", "c", "d"}, wantErr: "1 to 3 elements"},
		{path: []string{" "}, wantErr: "empty dataset"},
	} {
		got, err := parsePath(tc.path, tc.def)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parsePath(%q, %q) = %+v, %v; want an error containing %q", tc.path, tc.def, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parsePath(%q, %q) = %+v, %v; want %+v", tc.path, tc.def, got, err, tc.want)
		}
	}
}

// readPathShard reads one shard as Kubeflow Trainer's DataCacheDataset does: GetFlightInfo of
// a PATH descriptor on the head, then DoGet of each endpoint's ticket at each of its locations.
// It returns the ride_id column in the order read, and the FlightInfo.
func readPathShard(t *testing.T, head flight.Client, path ...string) ([]int64, *flight.FlightInfo) {
	t.Helper()
	ctx := testContext(t)
	info, err := head.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: path})
	if err != nil {
		t.Fatalf("GetFlightInfo(PATH %q): %v", path, err)
	}
	var ids []int64
	for _, ep := range info.Endpoint {
		if len(ep.Location) != 1 {
			t.Fatalf("PATH %q: an endpoint has %d locations; a reader of every location would read its rows %d times", path, len(ep.Location), len(ep.Location))
		}
		for _, loc := range ep.Location {
			addr, ok := strings.CutPrefix(loc.Uri, "grpc://")
			if !ok {
				t.Fatalf("location %q is not grpc://", loc.Uri)
			}
			stream, err := flightClient(t, addr).DoGet(ctx, ep.Ticket)
			if err != nil {
				t.Fatalf("DoGet at %s: %v", addr, err)
			}
			rdr, err := flight.NewRecordReader(stream)
			if err != nil {
				t.Fatalf("DoGet at %s: %v", addr, err)
			}
			for rdr.Next() {
				rec := rdr.RecordBatch()
				ids = append(ids, rec.Column(rec.Schema().FieldIndices("ride_id")[0]).(*array.Int64).Int64Values()...)
			}
			if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("DoGet at %s: %v", addr, err)
			}
			rdr.Release()
		}
	}
	return ids, info
}

// TestPathDescriptorShards reads datasets on three data nodes through PATH descriptors, the
// plain Flight protocol of Kubeflow Trainer's DataCacheDataset, for several shard counts: the
// shards hold every row once, in contiguous stretches of near-equal size, each endpoint at the
// one node that holds it, and total_records and the schema are the shard's.
func TestPathDescriptorShards(t *testing.T) {
	wh := demoWarehouse(t)
	c := startDatasetCluster(t, wh, 3)
	ctx := testContext(t)
	headFlight := flightClient(t, c.head.addr)
	cnxn := quietConn(t, c.head.addr)
	// One dataset over all nodes; one of a single partition, so two nodes hold none of it; one
	// of 5 rows, fewer than the shards asked for.
	mustLoad(t, ctx, headFlight, engine.DatasetSpec{Name: "wide", Table: "demo.rides", Columns: []string{"ride_id", "fare", "city"}, Partitions: 6})
	mustLoad(t, ctx, headFlight, engine.DatasetSpec{Name: "single", Table: "demo.rides", Columns: []string{"ride_id", "fare"}, Filter: "ride_id < 3000", Partitions: 1})
	mustLoad(t, ctx, headFlight, engine.DatasetSpec{Name: "tiny", Table: "demo.rides", Columns: []string{"ride_id"}, Filter: "ride_id < 5", Partitions: 2})

	nodeAddrs := map[string]bool{}
	for _, n := range c.nodes {
		nodeAddrs["grpc://"+n.addr] = true
	}
	datasetRows := map[string]int{}
	for _, name := range []string{"wide", "single", "tiny"} {
		var all []int64
		for _, r := range sortedRows(t, cnxn, "SELECT ride_id FROM "+name) {
			v, _ := strconv.ParseInt(r, 10, 64)
			all = append(all, v)
		}
		slices.Sort(all)
		datasetRows[name] = len(all)
		for _, shards := range []int{1, 4, 7} {
			var union []int64
			var sizes []int
			for k := range shards {
				ids, info := readPathShard(t, headFlight, name, strconv.Itoa(k), strconv.Itoa(shards))
				if info.TotalRecords != int64(len(ids)) {
					t.Errorf("%s shard %d/%d: total_records %d, read %d rows", name, k, shards, info.TotalRecords, len(ids))
				}
				schema, err := flight.DeserializeSchema(info.Schema, nil)
				if err != nil || schema.NumFields() == 0 || schema.Field(0).Name != "ride_id" {
					t.Errorf("%s shard %d/%d: schema %v (%v), want the dataset's", name, k, shards, schema, err)
				}
				for _, ep := range info.Endpoint {
					if !nodeAddrs[ep.Location[0].Uri] {
						t.Errorf("%s shard %d/%d: endpoint at %s, not a data node", name, k, shards, ep.Location[0].Uri)
					}
				}
				sizes = append(sizes, len(ids))
				union = append(union, ids...)
			}
			slices.Sort(union)
			if !slices.Equal(union, all) {
				t.Fatalf("%s in %d shards: read %d rows, want the dataset's %d each once", name, shards, len(union), len(all))
			}
			if lo, hi := slices.Min(sizes), slices.Max(sizes); hi-lo > 1 {
				t.Errorf("%s in %d shards: shard sizes %v differ by more than one row", name, shards, sizes)
			}
		}
	}

	t.Run("the two-element path needs a default dataset", func(t *testing.T) {
		// This head has no PathDataset (cmd/cachedb's Kubeflow mode sets one; its test reads
		// through it): the two-element form is refused, naming why.
		_, err := headFlight.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"0", "2"}})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "names no dataset") {
			t.Fatalf("two-element path without a default dataset: %v, want InvalidArgument", err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			path []string
			code codes.Code
		}{
			{[]string{"nosuch", "0", "1"}, codes.NotFound},
			{[]string{"wide", "7", "7"}, codes.InvalidArgument},
		} {
			_, err := headFlight.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: tc.path})
			if status.Code(err) != tc.code {
				t.Errorf("PATH %q: %v, want %s", tc.path, err, tc.code)
			}
		}
	})
	t.Run("CMD descriptors keep their Flight SQL meaning", func(t *testing.T) {
		// The dataset has fewer rows than the 7 shards read above, so some shards were empty.
		if n := datasetRows["tiny"]; n == 0 || n >= 7 {
			t.Fatalf("dataset tiny has %d rows, want 1 to 6 for the test to read empty shards", n)
		}
		// And a Flight SQL statement (a CMD descriptor) still runs on the same port.
		if rows := sortedRows(t, cnxn, "SELECT ride_id FROM wide WHERE ride_id < 100"); len(rows) != 99 {
			t.Fatalf("SQL over the dataset: %d rows, want 99", len(rows))
		}
	})
}
