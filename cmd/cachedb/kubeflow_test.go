package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/cachedb/cachedb/catalog/iceberg/demo"
)

func TestKubeflowEnv(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	k, err := kubeflowFromEnv(env())
	if k != nil || err != nil {
		t.Fatalf("without METADATA_LOC: %+v, %v; want neither", k, err)
	}
	k, err = kubeflowFromEnv(env("METADATA_LOC", "s3a://b/t/metadata/v1.metadata.json", "SCHEMA_NAME", "sales", "TABLE_NAME", "orders-2024",
		"LWS_LEADER_ADDRESS", "job-cache-0.job-cache.team", "LWS_GROUP_SIZE", "4", "LWS_WORKER_INDEX", "2"))
	if err != nil {
		t.Fatal(err)
	}
	if got := k.tableName(); got != "sales.orders-2024" {
		t.Errorf("table %q", got)
	}
	if got := k.dataset(); got != "orders_2024" {
		t.Errorf("dataset %q", got)
	}
	if got := k.dataNodes(); got != 3 {
		t.Errorf("data nodes %d, want LWS_GROUP_SIZE-1 = 3", got)
	}
	// LeaderWorkerSet names worker pods LWS-GROUP-INDEX under the leader's subdomain.
	if got := k.workerHost(); got != "job-cache-0-2.job-cache.team" {
		t.Errorf("worker host %q", got)
	}
	local, err := kubeflowFromEnv(env("METADATA_LOC", "/m.json", "TABLE_NAME", "t", "RUNTIME_ENV", "LOCAL"))
	if err != nil {
		t.Fatal(err)
	}
	if local.dataNodes() != 2 || local.leaderHost() != "127.0.0.1" || local.workerHost() != "" || local.schema != "default" {
		t.Errorf("local mode: %+v", local)
	}
	if k.clusterSecret() == local.clusterSecret() {
		t.Error("two caches of different tables derive the same cluster secret")
	}
	for _, bad := range [][]string{
		{"METADATA_LOC", "/m.json", "LWS_LEADER_ADDRESS", "l.x"},                                    // no TABLE_NAME
		{"METADATA_LOC", "/m.json", "TABLE_NAME", "t"},                                              // no leader, not local
		{"METADATA_LOC", "/m.json", "TABLE_NAME", "t", "RUNTIME_ENV", "", "LWS_GROUP_SIZE", "x"},    // bad size
		{"METADATA_LOC", "/m.json", "TABLE_NAME", "t", "RUNTIME_ENV", "", "HEALTH_PORT", "99999"},   // bad port
		{"METADATA_LOC", "/m.json", "TABLE_NAME", "t", "RUNTIME_ENV", "", "LWS_WORKER_INDEX", "-1"}, // bad index
	} {
		if k, err := kubeflowFromEnv(env(bad...)); err == nil {
			t.Errorf("%q: %+v, want an error", bad, k)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
		err  bool
	}{{nil, "", false}, {[]string{"0.0.0.0", "50051"}, "0.0.0.0:50051", false}, {[]string{"h"}, "", true}, {[]string{"h", "x"}, "", true}} {
		got, err := positionalListen(tc.args)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("positionalListen(%q) = %q, %v", tc.args, got, err)
		}
	}
}

func TestKubeflowDatasetSpec(t *testing.T) {
	h := kubeflowHead{env: &kubeflowEnv{metadataLoc: "s3a://b/m.json", schema: "sales", table: "orders"},
		columns: []string{"id", "amount"}, filter: "amount > 0"}
	spec := h.spec()
	q, err := spec.Query()
	if err != nil {
		t.Fatal(err)
	}
	// The table is files.sales.orders (--table sales.orders=METADATA_LOC), narrowed as asked.
	if want := "SELECT `id`, `amount` FROM `files.sales`.`orders` WHERE amount > 0"; q != want || spec.Name != "orders" {
		t.Fatalf("dataset %s: %s, want %s", spec.Name, q, want)
	}
	if got := (*kubeflowHead)(nil).pathDataset(); got != "" {
		t.Fatalf("a head outside Kubeflow mode reads PATH descriptors of dataset %q", got)
	}
}

// freePort returns a TCP port free on loopback now.
func freePort(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	_, port, _ := net.SplitHostPort(lis.Addr().String())
	return port
}

// startPod runs the binary under the name role (head or worker, a link to cachedb, as the
// image's commands are) with args and exactly env besides PATH and HOME: a pod of Kubeflow's
// data cache.
func startPod(t *testing.T, role string, env []string, args ...string) func() string {
	t.Helper()
	link := filepath.Join(t.TempDir(), role)
	if err := os.Symlink(binary, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AWS_EC2_METADATA_DISABLED=true"}, env...)
	var (
		mu  sync.Mutex
		out strings.Builder
	)
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// readiness answers GET /ready at port: its status code (0 while nothing listens) and body.
func readiness(port string) (int, string) {
	resp, err := http.Get("http://127.0.0.1:" + port + "/ready")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// awaitReadiness polls /ready at port until it answers code, for at most two minutes (a load
// on a busy machine).
func awaitReadiness(t *testing.T, port string, code int, log func() string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, body := readiness(port)
		if got == code {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("/ready on %s still %d %q, want %d; log:\n%s", port, got, body, code, log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readShardAsDataCacheDataset reads shard index of total exactly as Kubeflow Trainer's
// DataCacheDataset.__iter__ does (examples/pytorch/data-cache/fine-tune-with-cache.ipynb in
// kubeflow/trainer): GetFlightInfo(FlightDescriptor.for_path(str(index), str(total))) on the
// head, then for every endpoint and every one of its locations, DoGet(endpoint.ticket) on a
// new client of location.uri. It returns the ride_id column and the FlightInfo.
func readShardAsDataCacheDataset(t *testing.T, head string, index, total int) ([]int64, *flight.FlightInfo) {
	t.Helper()
	ids, info, err := readShardWithToken(head, index, total, "")
	if err != nil {
		t.Fatal(err)
	}
	return ids, info
}

// readShardWithToken is readShardAsDataCacheDataset with every call carrying the bearer token
// (none when empty), as a DataCacheDataset given call options with the authorization header
// reads; it returns the first error instead of failing the test.
func readShardWithToken(head string, index, total int, token string) ([]int64, *flight.FlightInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	dial := func(addr string) (flight.Client, error) {
		return flight.NewClientWithMiddleware(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	cl, err := dial(head)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	info, err := cl.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{strconv.Itoa(index), strconv.Itoa(total)}})
	if err != nil {
		return nil, nil, fmt.Errorf("get_flight_info(for_path(%d, %d)): %w", index, total, err)
	}
	var ids []int64
	for _, ep := range info.Endpoint {
		for _, loc := range ep.Location {
			addr, ok := strings.CutPrefix(loc.Uri, "grpc://")
			if !ok {
				return nil, nil, fmt.Errorf("location %q: pyarrow's FlightClient dials grpc:// URIs", loc.Uri)
			}
			got, err := doGetIDs(ctx, dial, addr, ep.Ticket)
			if err != nil {
				return nil, nil, fmt.Errorf("do_get at %s: %w", loc.Uri, err)
			}
			ids = append(ids, got...)
		}
	}
	return ids, info, nil
}

// doGetIDs redeems tk at addr on a new client and returns its ride_id column.
func doGetIDs(ctx context.Context, dial func(string) (flight.Client, error), addr string, tk *flight.Ticket) ([]int64, error) {
	node, err := dial(addr)
	if err != nil {
		return nil, err
	}
	defer node.Close()
	stream, err := node.DoGet(ctx, tk)
	if err != nil {
		return nil, err
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var ids []int64
	for rdr.Next() {
		rec := rdr.RecordBatch()
		ids = append(ids, rec.Column(rec.Schema().FieldIndices("ride_id")[0]).(*array.Int64).Int64Values()...)
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return ids, nil
}

// TestKubeflowDropIn starts a head and two workers as Kubeflow Trainer's data cache starts its
// pods: commands `head HOST PORT` and `worker HOST PORT`, and only the environment its cache
// initializer and LeaderWorkerSet give them (each process on its own loopback address, all on
// one port, as pods are). The head is not ready until the workers joined and the table is
// loaded; then every process is, and a client doing exactly what DataCacheDataset does reads
// every row once for 1, 4 and 7 shards, from the data nodes.
func TestKubeflowDropIn(t *testing.T) {
	wh, err := demo.Ensure(context.Background(), warehouseDir)
	if err != nil {
		t.Fatal(err)
	}
	metas, err := filepath.Glob(filepath.Join(strings.TrimPrefix(wh.Warehouse, "file://"), "demo.db", "rides", "metadata", "*.metadata.json"))
	if err != nil || len(metas) == 0 {
		t.Fatalf("no metadata.json of demo.rides in %s: %v", wh.Warehouse, err)
	}
	slices.Sort(metas) // 00000-…, 00001-…: the last is the table's current version
	port := freePort(t)
	common := []string{"METADATA_LOC=" + metas[len(metas)-1], "SCHEMA_NAME=demo", "TABLE_NAME=rides",
		"LWS_LEADER_ADDRESS=127.0.0.1", "LWS_GROUP_SIZE=3"}
	health := []string{freePort(t), freePort(t), freePort(t)}
	pod := func(i int) []string {
		return append(slices.Clone(common), fmt.Sprintf("LWS_WORKER_INDEX=%d", i), "HEALTH_PORT="+health[i])
	}
	headLog := startPod(t, "head", pod(0), "127.0.0.1", port)
	// Without its workers the head serves but is not ready, and says why.
	body := awaitReadiness(t, health[0], http.StatusServiceUnavailable, headLog)
	if !strings.Contains(body, "dataset rides loaded") {
		t.Fatalf("head /ready before its workers joined: %q, want it to name the dataset", body)
	}
	w1 := startPod(t, "worker", pod(1), "127.0.0.2", port)
	w2 := startPod(t, "worker", pod(2), "127.0.0.3", port)
	for i, log := range []func() string{headLog, w1, w2} {
		awaitReadiness(t, health[i], http.StatusOK, log)
	}
	head := net.JoinHostPort("127.0.0.1", port)
	total := mustAtoi(t, scalar(t, head, "SELECT count(*) FROM demo.rides"))
	if got := mustAtoi(t, scalar(t, head, "SELECT count(*) FROM rides")); got != total || total == 0 {
		t.Fatalf("dataset rides has %d rows, the table %d", got, total)
	}
	workers := map[string]bool{"grpc://127.0.0.2:" + port: true, "grpc://127.0.0.3:" + port: true}
	for _, shards := range []int{1, 4, 7} {
		seen := map[int64]int{}
		read := 0
		for k := range shards {
			ids, info := readShardAsDataCacheDataset(t, head, k, shards)
			if info.TotalRecords != int64(len(ids)) {
				t.Errorf("shard %d/%d: total_records %d, read %d rows", k, shards, info.TotalRecords, len(ids))
			}
			if d := len(ids) - total/shards; d < 0 || d > 1 {
				t.Errorf("shard %d/%d: %d rows of %d", k, shards, len(ids), total)
			}
			for _, ep := range info.Endpoint {
				if len(ep.Location) != 1 || !workers[ep.Location[0].Uri] {
					t.Errorf("shard %d/%d: endpoint located at %v, want one worker", k, shards, ep.Location)
				}
			}
			for _, id := range ids {
				seen[id]++
			}
			read += len(ids)
		}
		if read != total || len(seen) != total {
			t.Fatalf("%d shards: read %d rows, %d distinct, want each of the %d rows once", shards, read, len(seen), total)
		}
	}
}
