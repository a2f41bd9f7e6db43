package flightsql

import (
	"encoding/binary"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/engine"
)

// epochRead runs a training read through ADBC with its options as call headers (ADBC statement
// options adbc.flight.sql.rpc.call_header.*), and returns the ride_id column in the order read.
func epochRead(t *testing.T, cnxn adbc.Connection, query string, opts map[string]string) ([]int64, error) {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	for k, v := range opts {
		if err := stmt.SetOption("adbc.flight.sql.rpc.call_header.cachedb-"+strings.ReplaceAll(k, "_", "-"), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := stmt.SetSqlQuery(query); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := stmt.ExecuteQuery(testContext(t))
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var ids []int64
	for rdr.Next() {
		ids = append(ids, rdr.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
	}
	return ids, rdr.Err()
}

// rankOrder reads a rank's share through its workers and interleaves their batches as a
// DataLoader does: one batch from each worker in turn.
func rankOrder(t *testing.T, cnxn adbc.Connection, query string, opts map[string]string, workers, batch int) []int64 {
	t.Helper()
	var perWorker [][]int64
	for w := range workers {
		o := maps.Clone(opts)
		o["num_workers"], o["worker"], o["batch_size"] = strconv.Itoa(workers), strconv.Itoa(w), strconv.Itoa(batch)
		ids, err := epochRead(t, cnxn, query, o)
		if err != nil {
			t.Fatalf("worker %d of %v: %v", w, opts, err)
		}
		perWorker = append(perWorker, ids)
	}
	var out []int64
	for i := 0; ; i += batch {
		any := false
		for _, ids := range perWorker {
			if i < len(ids) {
				out = append(out, ids[i:min(i+batch, len(ids))]...)
				any = true
			}
		}
		if !any {
			return out
		}
	}
}

// TestTrainingReadsOnDataNodes checks the guarantees of training reads end to end: a dataset on
// three data nodes read by ranks and workers with call headers or a SQL hint, through ADBC.
// readNodeStreams reads query as node streams with training options opts (as the Python client
// does: every node's endpoint, each row placed by its batch's runs), failing t unless the
// FlightInfo is a node-streams read of want rows and the runs place every row once; it returns
// the rows' first column in the reader's order and how many batches the nodes sent.
func readNodeStreams(t *testing.T, c *datasetCluster, query string, opts map[string]string, want int) ([]int64, int) {
	t.Helper()
	ctx := testContext(t)
	headers := []string{"cachedb-node-streams", "true"}
	for k, v := range opts {
		headers = append(headers, "cachedb-"+k, v)
	}
	info, err := c.head.arrowClient(t).Execute(metadata.AppendToOutgoingContext(ctx, headers...), query)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		NodeStreams bool `json:"node_streams"`
	}
	if err := json.Unmarshal(info.AppMetadata, &meta); err != nil || !meta.NodeStreams || info.Ordered || len(info.Endpoint) != len(c.nodes) || info.TotalRecords != int64(want) {
		t.Fatalf("node streams: app_metadata %s, ordered=%v, %d endpoints, %d records", info.AppMetadata, info.Ordered, len(info.Endpoint), info.TotalRecords)
	}
	got := make([]int64, want)
	seen := make([]bool, want)
	batches := 0
	for i, ep := range info.Endpoint {
		rdr, err := flightClient(t, strings.TrimPrefix(ep.Location[0].Uri, "grpc://")).DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		r, err := flight.NewRecordReader(rdr)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			batches++
			ids := r.RecordBatch().Column(0).(*array.Int64).Int64Values()
			runs := r.LatestAppMetadata()
			at := 0
			for k := 0; k+16 <= len(runs); k += 16 {
				u, n := int(binary.LittleEndian.Uint64(runs[k:])), int(binary.LittleEndian.Uint64(runs[k+8:]))
				if u < 0 || n < 0 || u+n > want || at+n > len(ids) {
					t.Fatalf("endpoint %d: a batch of %d rows places %d rows at %d of %d", i, len(ids), n, u, want)
				}
				copy(got[u:u+n], ids[at:at+n])
				for j := u; j < u+n; j++ {
					if seen[j] {
						t.Fatalf("endpoint %d: row %d of the reader placed twice", i, j)
					}
					seen[j] = true
				}
				at += n
			}
			if at != len(ids) {
				t.Fatalf("endpoint %d: a batch of %d rows describes %d", i, len(ids), at)
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	if missing := slices.Index(seen, false); missing >= 0 {
		t.Fatalf("the node streams left row %d of the reader's %d unplaced", missing, want)
	}
	return got, batches
}

func TestTrainingReadsOnDataNodes(t *testing.T) {
	wh := demoWarehouse(t)
	c := startDatasetCluster(t, wh, 3)
	ctx := testContext(t)
	cnxn := quietConn(t, c.head.addr)
	headFlight := flightClient(t, c.head.addr)
	spec := engine.DatasetSpec{Name: "train", Table: "demo.rides", Columns: []string{"ride_id", "fare", "city"}, Filter: "passengers >= 2", Partitions: 5}
	ds := mustLoad(t, ctx, headFlight, spec)
	var all []int64
	for _, r := range sortedRows(t, cnxn, "SELECT ride_id FROM train") {
		v, _ := strconv.ParseInt(r, 10, 64)
		all = append(all, v)
	}
	slices.Sort(all)
	if int64(len(all)) != ds.Rows || len(all) < 10000 {
		t.Fatalf("dataset has %d rows, load said %d", len(all), ds.Rows)
	}
	const query = "SELECT ride_id, fare FROM train"
	base := map[string]string{"seed": "11", "epoch": "0", "window_rows": "4096", "chunk_rows": "64"}

	readEpoch := func(world, workers, batch int, extra map[string]string) [][]int64 {
		var ranks [][]int64
		for r := range world {
			o := maps.Clone(base)
			maps.Copy(o, extra)
			o["rank"], o["world_size"] = strconv.Itoa(r), strconv.Itoa(world)
			ranks = append(ranks, rankOrder(t, cnxn, query, o, workers, batch))
		}
		return ranks
	}
	var epoch0 []int64
	t.Run("exactly once, equal shares, any world size", func(t *testing.T) {
		for _, shape := range []struct{ world, workers, batch int }{{1, 1, 1000}, {2, 2, 100}, {3, 2, 77}, {4, 3, 64}} {
			ranks := readEpoch(shape.world, shape.workers, shape.batch, nil)
			var union, order []int64
			for _, ids := range ranks {
				if d := len(ids) - len(ranks[0]); d < -1 || d > 1 {
					t.Errorf("%+v: shares of %d and %d rows", shape, len(ranks[0]), len(ids))
				}
				union = append(union, ids...)
				order = append(order, ids...)
			}
			slices.Sort(union)
			if !slices.Equal(union, all) {
				t.Fatalf("%+v: the ranks read %d rows, not the dataset's %d each once", shape, len(union), len(all))
			}
			// The order does not depend on the world size.
			if epoch0 == nil {
				epoch0 = order
			} else if !slices.Equal(order, epoch0) {
				t.Errorf("%+v: the epoch order differs from one reader's", shape)
			}
		}
	})
	t.Run("every row keeps its own values", func(t *testing.T) {
		// fare is gathered by a typed copy, city (strings) from the window's rows: a shuffled
		// epoch holds the dataset's rows exactly, whole.
		want := sortedRows(t, cnxn, "SELECT ride_id, fare, city FROM train")
		for _, hint := range []string{"seed=5, window_rows=1000, chunk_rows=16", "shuffle=false", "seed=9, epoch=2, batch_size=100"} {
			got := sortedRows(t, cnxn, "SELECT /*+ TRAINING("+hint+") */ ride_id, fare, city FROM train")
			if d := sameRows(got, want); d != "" {
				t.Fatalf("TRAINING(%s): %s", hint, d)
			}
		}
	})
	t.Run("columns are held and streamed as the table stores them", func(t *testing.T) {
		// demo.rides stores f0 as float and passengers and label as int: a dataset holds them so
		// (half the memory of float64 / int64) and training reads stream them so, while SQL over
		// the dataset computes with the engine's int64 / float64 as over the table.
		mustLoad(t, ctx, headFlight, engine.DatasetSpec{Name: "narrow", Table: "demo.rides", Columns: []string{"ride_id", "f0", "passengers", "label"}, Filter: "ride_id < 3000", Partitions: 3})
		stmt, err := cnxn.NewStatement()
		if err != nil {
			t.Fatal(err)
		}
		defer stmt.Close()
		if err := stmt.SetSqlQuery("SELECT /*+ TRAINING(seed=2) */ ride_id, f0, passengers, label FROM narrow"); err != nil {
			t.Fatal(err)
		}
		rdr, _, err := stmt.ExecuteQuery(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := rdr.Schema()
		rdr.Release()
		want := []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int32}
		for i, w := range want {
			if !arrow.TypeEqual(got.Field(i).Type, w) {
				t.Errorf("training read column %s is %s, want %s", got.Field(i).Name, got.Field(i).Type, w)
			}
		}
		sqlRows := sortedRows(t, cnxn, "SELECT ride_id, f0, passengers, label FROM narrow")
		if d := sameRows(sqlRows, sortedRows(t, cnxn, "SELECT ride_id, f0, passengers, label FROM demo.rides WHERE ride_id < 3000")); d != "" {
			t.Fatalf("the dataset's rows differ from the table's: %s", d)
		}
		trained := sortedRows(t, cnxn, "SELECT /*+ TRAINING(seed=2) */ ride_id, f0, passengers, label FROM narrow")
		for i, r := range trained { // f0 as SQL shows it: the float32 widened to float64
			cols := strings.Split(r, "|")
			if f, err := strconv.ParseFloat(cols[1], 32); err == nil {
				cols[1] = strconv.FormatFloat(float64(float32(f)), 'g', -1, 64)
			}
			trained[i] = strings.Join(cols, "|")
		}
		slices.Sort(trained)
		if d := sameRows(trained, sqlRows); d != "" {
			t.Fatalf("a training read differs from SQL over the dataset: %s", d)
		}
	})
	t.Run("drop_last and pad give equal shares", func(t *testing.T) {
		drop := readEpoch(3, 2, 50, map[string]string{"shares": "drop_last"})
		pad := readEpoch(3, 1, 50, map[string]string{"shares": "pad"})
		seen := map[int64]int{}
		for r := range 3 {
			if len(drop[r]) != len(drop[0]) || len(drop[r])%50 != 0 || len(pad[r]) != len(pad[0]) {
				t.Fatalf("drop_last shares %d/%d, pad shares %d/%d", len(drop[0]), len(drop[r]), len(pad[0]), len(pad[r]))
			}
			for _, id := range pad[r] {
				seen[id]++
			}
		}
		if len(seen) != len(all) || 3*len(pad[0]) < len(all) {
			t.Errorf("pad read %d distinct rows of %d", len(seen), len(all))
		}
		if lost := len(all) - 3*len(drop[0]); lost < 0 || lost >= 3*50+3 {
			t.Errorf("drop_last left out %d rows", lost)
		}
	})
	t.Run("epochs differ, seeds repeat", func(t *testing.T) {
		again := readEpoch(1, 1, 1000, nil)[0]
		next := readEpoch(1, 1, 1000, map[string]string{"epoch": "1"})[0]
		if !slices.Equal(again, epoch0) {
			t.Error("the same seed and epoch gave another order")
		}
		if slices.Equal(next, epoch0) || sameSuccessors(epoch0, next) > len(next)/50 {
			t.Error("epoch 1 keeps epoch 0's order")
		}
		plain := readEpoch(1, 1, 1000, map[string]string{"shuffle": "false"})[0]
		if slices.Equal(plain, epoch0) {
			t.Error("shuffle=false gave the shuffled order")
		}
	})
	t.Run("resume from an offset", func(t *testing.T) {
		full := readEpoch(2, 2, 64, nil)[1]
		for _, k := range []int{0, 1, 63, 64, 1000, len(full) - 1, len(full)} {
			rest := readEpoch(2, 2, 64, map[string]string{"offset": strconv.Itoa(k)})[1]
			if !slices.Equal(rest, full[k:]) {
				t.Fatalf("offset %d: %d rows, want the %d after it", k, len(rest), len(full)-k)
			}
		}
	})
	t.Run("the SQL hint carries the same options", func(t *testing.T) {
		hinted := "SELECT /*+ TRAINING(seed=11, epoch=0, window_rows=4096, chunk_rows=64, rank=1, world_size=2, num_workers=2, worker=1, batch_size=64) */ ride_id, fare FROM train"
		viaHint, err := epochRead(t, cnxn, hinted, nil)
		if err != nil {
			t.Fatal(err)
		}
		o := maps.Clone(base)
		maps.Copy(o, map[string]string{"rank": "1", "world_size": "2", "num_workers": "2", "worker": "1", "batch_size": "64"})
		viaHeaders, err := epochRead(t, cnxn, query, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(viaHint) == 0 || !slices.Equal(viaHint, viaHeaders) {
			t.Errorf("hint read %d rows, headers %d, not the same", len(viaHint), len(viaHeaders))
		}
		if _, err := epochRead(t, cnxn, hinted, map[string]string{"rank": "0"}); grpcCode(err) != codes.InvalidArgument {
			t.Errorf("hint and header disagreeing: %v", err)
		}
	})
	t.Run("endpoints are located at the nodes, in order", func(t *testing.T) {
		cl := c.head.arrowClient(t)
		hctx := metadata.AppendToOutgoingContext(ctx, "cachedb-seed", "3", "cachedb-world-size", "2", "cachedb-rank", "0", "cachedb-window-rows", "4096")
		info, err := cl.Execute(hctx, query)
		if err != nil {
			t.Fatal(err)
		}
		nodes := map[string]bool{}
		for _, n := range c.nodes {
			nodes["grpc://"+n.addr] = true
		}
		if !info.Ordered || len(info.Endpoint) < 3 || info.TotalRecords != int64(len(all)/2) {
			t.Errorf("ordered=%v, %d endpoints, %d records", info.Ordered, len(info.Endpoint), info.TotalRecords)
		}
		for i, ep := range info.Endpoint {
			if len(ep.Location) != 1 || !nodes[ep.Location[0].Uri] {
				t.Errorf("endpoint %d at %v", i, ep.Location)
			}
		}
	})
	t.Run("node streams: one endpoint per node, rows placed by their runs", func(t *testing.T) {
		opts := map[string]string{"seed": "3", "world_size": "2", "rank": "1", "window_rows": "4096", "batch_size": "64"}
		want, err := epochRead(t, cnxn, query, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := readNodeStreams(t, c, query, opts, len(want)); !slices.Equal(got, want) {
			t.Fatalf("the node streams placed %d rows, not the ordered read's %d in its order", len(got), len(want))
		}
	})
	t.Run("an ordered read of too many alternations is refused, naming node_streams", func(t *testing.T) {
		defer func(n int) { engine.MaxOrderedSegments = n }(engine.MaxOrderedSegments)
		engine.MaxOrderedSegments = 3
		_, err := epochRead(t, cnxn, query, map[string]string{"seed": "3"})
		if grpcCode(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "node_streams=true") || !strings.Contains(err.Error(), "mixing=windows") {
			t.Errorf("an ordered read of many segments: %v", err)
		}
		if _, err := c.head.arrowClient(t).Execute(metadata.AppendToOutgoingContext(ctx, "cachedb-seed", "3", "cachedb-node-streams", "true"), query); err != nil {
			t.Errorf("the same read as node streams: %v", err)
		}
	})
	t.Run("a read mixed by windows: a window from one node at a time, few endpoints", func(t *testing.T) {
		rows, err := epochRead(t, cnxn, query, map[string]string{"seed": "3", "mixing": "windows"})
		if err != nil || len(rows) != len(all) {
			t.Fatalf("%d rows of %d, %v", len(rows), len(all), err)
		}
		info, err := c.head.arrowClient(t).Execute(metadata.AppendToOutgoingContext(ctx, "cachedb-seed", "3", "cachedb-mixing", "windows"), query)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := c.head.arrowClient(t).Execute(metadata.AppendToOutgoingContext(ctx, "cachedb-seed", "3"), query)
		if err != nil {
			t.Fatal(err)
		}
		// Every partition is one window (under 65,536 rows): at most one endpoint each.
		if !info.Ordered || len(info.Endpoint) > len(c.nodes)*4 || len(info.Endpoint) >= len(blocks.Endpoint) {
			t.Fatalf("ordered=%v, %d endpoints mixed by windows, %d by blocks", info.Ordered, len(info.Endpoint), len(blocks.Endpoint))
		}
	})
	t.Run("bad reads are refused and the server keeps serving", func(t *testing.T) {
		for q, opts := range map[string]map[string]string{
			"SELECT ride_id FROM train WHERE fare > 3":   {"seed": "1"},
			"SELECT ride_id + 1 FROM train":              {"seed": "1"},
			"SELECT count(*) FROM train":                 {"seed": "1"},
			"SELECT ride_id FROM demo.rides":             {"seed": "1"},
			"SELECT ride_id FROM train ":                 {"rank": "2", "world_size": "2"},
			"SELECT ride_id FROM train  ":                {"num_workers": "2"},
			"SELECT ride_id FROM train   ":               {"shares": "some"},
			"SELECT ride_id FROM train    ":              {"epoch": "-1"},
			"SELECT /*+ TRAINING(colour=red) */ 1":       nil,
			"SELECT /*+ TRAINING(seed=1) */ * FROM nope": nil,
		} {
			_, err := epochRead(t, cnxn, q, opts)
			if code := grpcCode(err); code != codes.InvalidArgument && code != codes.NotFound {
				t.Errorf("%s %v: %v (%v)", q, opts, err, code)
			}
		}
		if rows := sortedRows(t, cnxn, "SELECT count(*) FROM train"); len(rows) != 1 || rows[0] != strconv.Itoa(len(all)) {
			t.Errorf("count after bad reads = %v", rows)
		}
	})
	t.Run("a job resumed on another world size reads the rows left, once, in equal shares", func(t *testing.T) {
		// Two ranks stopped part way: rank 0 after 10 batches of 64, rank 1 after 11.
		before := readEpoch(2, 1, 64, nil)
		left := append(slices.Clone(before[0][640:]), before[1][704:]...)
		for _, shape := range []struct{ world, workers int }{{3, 2}, {1, 2}, {2, 1}} {
			ranks := readEpoch(shape.world, shape.workers, 64, map[string]string{"resume": "640,704"})
			var got []int64
			for _, ids := range ranks {
				if d := len(ids) - len(ranks[0]); d < -1 || d > 1 {
					t.Errorf("%+v: shares of %d and %d rows", shape, len(ranks[0]), len(ids))
				}
				got = append(got, ids...)
			}
			// The rows left, in the order the stopped ranks would have read them.
			if !slices.Equal(got, left) {
				t.Fatalf("%+v: resumed ranks read %d rows, want the %d left", shape, len(got), len(left))
			}
		}
		// Run-length offsets, and a chain: the 3-rank job stopped after one batch each, then 1 rank.
		three := readEpoch(3, 1, 64, map[string]string{"resume": "640*2"})
		var rest []int64
		for _, ids := range three {
			rest = append(rest, ids[min(64, len(ids)):]...)
		}
		if chained := readEpoch(1, 2, 64, map[string]string{"resume": "640*2;64,64,64"})[0]; !slices.Equal(chained, rest) {
			t.Fatalf("a chain of resumes read %d rows, want %d", len(chained), len(rest))
		}
		if _, err := epochRead(t, cnxn, query, map[string]string{"resume": "1,x"}); grpcCode(err) != codes.InvalidArgument {
			t.Errorf("a malformed resume: %v", err)
		}
	})
	t.Run("reads name their order; it is pinned, counted, and drop_last may not empty it", func(t *testing.T) {
		cl := c.head.arrowClient(t)
		info, err := cl.Execute(metadata.AppendToOutgoingContext(ctx, "cachedb-seed", "3"), query)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Dataset    string `json:"dataset"`
			Generation uint64 `json:"generation"`
			OrderKey   string `json:"order_key"`
			EpochRows  int64  `json:"epoch_rows"`
		}
		if err := json.Unmarshal(info.AppMetadata, &meta); err != nil || meta.Dataset != "train" || meta.Generation != ds.Generation || meta.OrderKey == "" || meta.EpochRows != int64(len(all)) {
			t.Fatalf("app_metadata %s: %+v, %v", info.AppMetadata, meta, err)
		}
		for i, ep := range info.Endpoint {
			var em struct{ Partitions []int }
			if err := json.Unmarshal(ep.AppMetadata, &em); err != nil || len(em.Partitions) == 0 {
				t.Errorf("endpoint %d app_metadata %s: %v", i, ep.AppMetadata, err)
			}
		}
		hits := systemDatasets(t, cnxn)["train"].hits
		pinned := maps.Clone(base)
		pinned["order_key"] = meta.OrderKey
		if _, err := epochRead(t, cnxn, query, pinned); err != nil {
			t.Fatalf("a read pinned to the dataset's own order: %v", err)
		}
		if now := systemDatasets(t, cnxn)["train"].hits; now <= hits {
			t.Errorf("a training read left system.datasets.hits at %d", now)
		}
		pinned["order_key"] = "0123456789abcdef"
		if _, err := epochRead(t, cnxn, query, pinned); grpcCode(err) != codes.NotFound || !strings.Contains(err.Error(), "order") {
			t.Errorf("a read pinned to another order: %v", err)
		}
		empty := map[string]string{"shares": "drop_last", "world_size": "4", "rank": "0", "batch_size": strconv.Itoa(len(all)/4 + 1)}
		if _, err := epochRead(t, cnxn, query, empty); grpcCode(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "drop_last") {
			t.Errorf("drop_last that empties the epoch: %v", err)
		}
	})
	t.Run("the order key survives a rebuild of the same dataset, not another definition", func(t *testing.T) {
		orderKey := func() (string, uint64) {
			info, err := c.head.arrowClient(t).Execute(metadata.AppendToOutgoingContext(ctx, "cachedb-seed", "1"), "SELECT ride_id FROM keyed")
			if err != nil {
				t.Fatal(err)
			}
			var meta struct {
				Generation uint64 `json:"generation"`
				OrderKey   string `json:"order_key"`
			}
			if err := json.Unmarshal(info.AppMetadata, &meta); err != nil {
				t.Fatal(err)
			}
			return meta.OrderKey, meta.Generation
		}
		spec := engine.DatasetSpec{Name: "keyed", Table: "demo.rides", Columns: []string{"ride_id"}, Filter: "ride_id < 3000", Partitions: 3}
		mustLoad(t, ctx, headFlight, spec)
		key1, gen1 := orderKey()
		adbcUpdate(t, cnxn, "DROP TABLE keyed")
		mustLoad(t, ctx, headFlight, spec)
		key2, gen2 := orderKey()
		if gen2 == gen1 || key2 != key1 {
			t.Errorf("made again from the same definition: generation %d→%d, order key %s→%s", gen1, gen2, key1, key2)
		}
		adbcUpdate(t, cnxn, "DROP TABLE keyed")
		spec.Filter = "ride_id < 2999"
		mustLoad(t, ctx, headFlight, spec)
		if key3, _ := orderKey(); key3 == key1 {
			t.Errorf("made from another definition, the order key %s stayed", key3)
		}
		if _, err := epochRead(t, cnxn, "SELECT ride_id FROM keyed", map[string]string{"order_key": key1}); grpcCode(err) != codes.NotFound {
			t.Errorf("a read pinned to the old order: %v", err)
		}
	})
	t.Run("a node lost and its partitions rebuilt: the same order", func(t *testing.T) {
		c.nodes[1].stop()
		waitFor(t, "the dataset rebuilt on the survivors", func() bool {
			row := systemDatasets(t, cnxn)["train"]
			return row.state == cluster.DatasetReady && len(row.nodes) == 2
		})
		var after []int64
		deadline := time.Now().Add(30 * time.Second)
		for {
			ids, err := epochRead(t, cnxn, query, base)
			if err == nil {
				after = ids
				break
			}
			if grpcCode(err) != codes.Unavailable || time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !slices.Equal(after, epoch0) {
			t.Errorf("after the rebuild the epoch reads %d rows in another order", len(after))
		}
	})
}

// A node's batch larger than the cap on what a server sends is sent in pieces; each piece must
// carry its own rows' runs, or a client merging node streams cannot place them.
func TestNodeStreamsSplitUnderTheBatchCap(t *testing.T) {
	const maxBatch = ipcOverheadBytes + 32<<10
	c := startDatasetClusterWith(t, demoWarehouse(t), 2, Options{MaxBatchBytes: maxBatch})
	ctx := testContext(t)
	cnxn := quietConn(t, c.head.addr)
	ds := mustLoad(t, ctx, flightClient(t, c.head.addr), engine.DatasetSpec{Name: "train", Table: "demo.rides", Columns: []string{"ride_id", "fare"}, Partitions: 4})
	const query = "SELECT ride_id, fare FROM train"
	opts := map[string]string{"seed": "5", "batch_size": "8192"}
	want, err := epochRead(t, cnxn, query, opts)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(want)) != ds.Rows {
		t.Fatalf("the ordered read has %d rows of %d", len(want), ds.Rows)
	}
	got, batches := readNodeStreams(t, c, query, opts, len(want))
	if !slices.Equal(got, want) {
		t.Fatal("the node streams' rows are not the ordered read's, in its order")
	}
	// 16 bytes a row: batches of at most 32 KiB of rows hold at most 2,048 rows.
	if min := len(want) / 2048; batches < min {
		t.Errorf("the nodes sent %d batches for %d rows: not split under the cap (at least %d)", batches, len(want), min)
	}
}

// sameSuccessors counts the rows followed by the same row in both orders.
func sameSuccessors(a, b []int64) int {
	next := make(map[int64]int64, len(a))
	for i := 0; i+1 < len(a); i++ {
		next[a[i]] = a[i+1]
	}
	n := 0
	for i := 0; i+1 < len(b); i++ {
		if v, ok := next[b[i]]; ok && v == b[i+1] {
			n++
		}
	}
	return n
}
