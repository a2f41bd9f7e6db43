package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

var httpLine = regexp.MustCompile(`serving /live, /ready and /metrics on (\S+:\d+)`)

// startObserved runs cachedb with args and returns the process and the addresses its log
// names: want[i]'s first group, for each pattern.
func startObserved(t *testing.T, want []*regexp.Regexp, args ...string) (*exec.Cmd, []string) {
	t.Helper()
	cmd, addrs, _ := startLogged(t, want, args...)
	return cmd, addrs
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// waitReady polls /ready until it answers 200, for at most 30 s.
func waitReady(t *testing.T, httpAddr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := httpGet(t, "http://"+httpAddr+"/ready")
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/ready still %d %q after 30s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scrape reads /metrics, checks it is valid text exposition that passes `promtool check
// metrics`'s linter for the cachedb metrics, and returns the families by name.
func scrape(t *testing.T, httpAddr string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := httpGet(t, "http://"+httpAddr+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "cachedb_") {
			t.Errorf("/metrics: %s: %s", p.Metric, p.Text)
		}
	}
	return families
}

// value is the sample of family name whose labels include labels (0 when there is none).
func value(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := families[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return 0
}

func grpcHealth(t *testing.T, addr string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("gRPC health check on %s: %v", addr, err)
	}
	return resp.GetStatus()
}

// serve with an in-process data node: live, ready once the node registered, healthy on the
// Flight port, and its metrics move when statements run.
func TestServeHealthAndMetrics(t *testing.T) {
	cmd, addrs := startObserved(t, []*regexp.Regexp{listeningLine, httpLine},
		"serve", "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--no-warehouse", "--workers", "1")
	defer stopServe(t, cmd)
	flightAddr, httpAddr := addrs[0], addrs[1]
	if code, body := httpGet(t, "http://"+httpAddr+"/live"); code != http.StatusOK {
		t.Errorf("/live = %d %q", code, body)
	}
	waitReady(t, httpAddr)
	if st := grpcHealth(t, flightAddr); st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("gRPC health = %s, want SERVING", st)
	}
	if code, _ := httpGet(t, "http://"+httpAddr+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ without --pprof = %d, want 404", code)
	}

	before := scrape(t, httpAddr)
	if got := value(before, "cachedb_nodes", map[string]string{"state": "alive"}); got != 1 {
		t.Errorf("cachedb_nodes{state=alive} = %v, want 1", got)
	}
	if got := value(before, "cachedb_build_info", map[string]string{"version": "dev"}); got != 1 {
		t.Errorf("cachedb_build_info{version=dev} = %v, want 1", got)
	}
	ok := map[string]string{"kind": "query", "outcome": "ok"}
	if _, errOut, err := runCLI(t, "", nil, "sql", "--connect", flightAddr, "-e", "SELECT 1 AS one UNION ALL SELECT 2"); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if _, _, err := runCLI(t, "", nil, "sql", "--connect", flightAddr, "-e", "SELECT * FROM missing_table"); err == nil {
		t.Fatal("a query of a missing table succeeded")
	}
	after := scrape(t, httpAddr)
	if d := value(after, "cachedb_statements_total", ok) - value(before, "cachedb_statements_total", ok); d != 1 {
		t.Errorf("cachedb_statements_total{kind=query,outcome=ok} moved by %v, want 1", d)
	}
	notFound := map[string]string{"kind": "query", "outcome": "not_found"}
	if d := value(after, "cachedb_statements_total", notFound) - value(before, "cachedb_statements_total", notFound); d != 1 {
		t.Errorf("cachedb_statements_total{kind=query,outcome=not_found} moved by %v, want 1", d)
	}
	if d := value(after, "cachedb_statement_duration_seconds", map[string]string{"kind": "query"}) - value(before, "cachedb_statement_duration_seconds", map[string]string{"kind": "query"}); d < 1 {
		t.Errorf("cachedb_statement_duration_seconds{kind=query} observed %v more, want at least 1", d)
	}
	if d := value(after, "cachedb_served_rows_total", map[string]string{"kind": "query"}) - value(before, "cachedb_served_rows_total", map[string]string{"kind": "query"}); d != 2 {
		t.Errorf("cachedb_served_rows_total{kind=query} moved by %v, want 2", d)
	}
}

// Probes ask the gRPC health service without logging in, also where every other call needs a
// login (--users).
func TestHealthNeedsNoLogin(t *testing.T) {
	cmd, addrs := startObserved(t, []*regexp.Regexp{listeningLine, httpLine},
		"serve", "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--no-warehouse", "--users", writeUsers(t))
	defer stopServe(t, cmd)
	waitReady(t, addrs[1])
	if st := grpcHealth(t, addrs[0]); st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("gRPC health with --users = %s, want SERVING", st)
	}
	if _, errOut, err := runCLI(t, "", nil, "sql", "--connect", addrs[0], "-e", "SELECT 1"); err == nil || !strings.Contains(errOut, "log in") {
		t.Errorf("a query without a login: err=%v stderr=%q, want it refused", err, errOut)
	}
}

// A dataset made, a distributed query and a training read show in the head's metrics: the
// dataset's bytes per node, the shares the nodes stream, the training rows.
func TestClusterMetrics(t *testing.T) {
	cmd, addrs := startObserved(t, []*regexp.Regexp{listeningLine, httpLine},
		"serve", "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--warehouse="+warehouseDir, "--workers", "2")
	defer stopServe(t, cmd)
	flightAddr, httpAddr := addrs[0], addrs[1]
	waitReady(t, httpAddr)
	sql := func(q string) string {
		t.Helper()
		out, errOut, err := runCLI(t, "", nil, "sql", "--connect", flightAddr, "-e", q)
		if err != nil {
			t.Fatalf("%s: %v\n%s", q, err, errOut)
		}
		return out
	}
	before := scrape(t, httpAddr)
	sql("CREATE TABLE metrics_lisbon AS SELECT ride_id, city FROM demo.rides WHERE city = 'Lisbon'")
	sql("SELECT count(*) FROM metrics_lisbon") // the head gathers the nodes' partial counts
	sql("SELECT ride_id FROM metrics_lisbon")  // the nodes stream their shares
	out := sql("SELECT /*+ TRAINING(seed=7, epoch=0, rank=0, world_size=1) */ ride_id FROM metrics_lisbon")
	m := regexp.MustCompile(`(\d+) rows in set`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("training read:\n%s", out)
	}
	after := scrape(t, httpAddr)
	delta := func(name string, labels map[string]string) float64 {
		return value(after, name, labels) - value(before, name, labels)
	}
	if d := delta("cachedb_dataset_loads_total", map[string]string{"outcome": "ok"}); d != 1 {
		t.Errorf("cachedb_dataset_loads_total{outcome=ok} moved by %v, want 1", d)
	}
	if d := delta("cachedb_statements_total", map[string]string{"kind": "update", "outcome": "ok"}); d != 1 {
		t.Errorf("cachedb_statements_total{kind=update} moved by %v, want 1 (the CREATE TABLE ... AS SELECT)", d)
	}
	if d := delta("cachedb_first_batch_seconds", map[string]string{"kind": "training"}); d < 1 {
		t.Errorf("cachedb_first_batch_seconds{kind=training} has %v more observations, want the training read's", d)
	}
	// Making the dataset read its Parquet files: the object-store counters moved.
	if d := delta("cachedb_object_store_read_bytes_total", nil); d <= 0 {
		t.Errorf("cachedb_object_store_read_bytes_total moved by %v while a dataset was read from Parquet", d)
	}
	if d := delta("cachedb_object_store_requests_total", nil); d <= 0 {
		t.Errorf("cachedb_object_store_requests_total moved by %v", d)
	}
	held := 0
	for _, metric := range after["cachedb_dataset_bytes"].GetMetric() {
		if metric.GetGauge().GetValue() > 0 {
			held++
		}
	}
	if held != 2 {
		t.Errorf("cachedb_dataset_bytes is positive for %d nodes, want both", held)
	}
	if d := delta("cachedb_statements_total", map[string]string{"kind": "query", "outcome": "ok"}); d != 2 {
		t.Errorf("cachedb_statements_total{kind=query} moved by %v, want 2 (the count, gathered by the head, and the scan, answered with the nodes' endpoints)", d)
	}
	if d := delta("cachedb_statements_total", map[string]string{"kind": "stage", "outcome": "ok"}); d < 1 {
		t.Errorf("cachedb_statements_total{kind=stage} moved by %v: the scan's shares were not counted", d)
	}
	if d, want := delta("cachedb_served_rows_total", map[string]string{"kind": "training"}), m[1]; fmt.Sprint(d) != want {
		t.Errorf("cachedb_served_rows_total{kind=training} moved by %v, want the %s rows read", d, want)
	}
}

// A data node is ready only once the head accepted its registration, and its /ready says
// why not until then.
func TestWorkerReadyWhenRegistered(t *testing.T) {
	// The worker's --head is a forwarder the test holds open: it drops every connection until
	// the head runs, then passes them to it. (A head address merely known to be free could be
	// taken meanwhile by the worker's own dial connecting to itself.)
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	var target atomic.Value // the head's address once it runs
	target.Store("")
	go forward(front, &target)
	secret := []string{secretFile(t, "cluster-secret", "observe-test-secret")}
	worker, addrs := startObserved(t, []*regexp.Regexp{workerListeningLine, httpLine}, append([]string{"worker",
		"--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--head", front.Addr().String(), "--id", "w1", "--no-warehouse"}, secret...)...)
	defer stopServe(t, worker)
	httpAddr := addrs[1]
	if code, body := httpGet(t, "http://"+httpAddr+"/ready"); code != http.StatusServiceUnavailable || !strings.Contains(body, "registered with the head") {
		t.Errorf("/ready without a head = %d %q, want 503 naming the registration", code, body)
	}
	if code, _ := httpGet(t, "http://"+httpAddr+"/live"); code != http.StatusOK {
		t.Errorf("/live without a head = %d, want 200", code)
	}
	head, headAddr := startProcess(t, listeningLine, append([]string{"head", "--listen", "127.0.0.1:0", "--no-warehouse"}, secret...)...)
	defer stopServe(t, head)
	target.Store(headAddr)
	waitReady(t, httpAddr)
	if st := grpcHealth(t, addrs[0]); st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("data node gRPC health = %s, want SERVING", st)
	}
}

// forward accepts connections on lis until it is closed: each is closed at once while target
// is "", else joined to a connection to target.
func forward(lis net.Listener, target *atomic.Value) {
	for {
		c, err := lis.Accept()
		if err != nil {
			return
		}
		addr := target.Load().(string)
		if addr == "" {
			c.Close()
			continue
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer up.Close()
			go func() { _, _ = io.Copy(up, c) }()
			_, _ = io.Copy(c, up)
		}()
	}
}

func TestLogFlags(t *testing.T) {
	for _, args := range [][]string{{"--log-format", "yaml"}, {"--log-level", "loud"}} {
		_, errOut, err := runCLI(t, "", nil, append([]string{"serve", "--listen", "127.0.0.1:0", "--no-warehouse"}, args...)...)
		if err == nil || !strings.Contains(errOut, args[0]) {
			t.Errorf("%s: err=%v stderr=%q", strings.Join(args, " "), err, errOut)
		}
	}
	// CACHEDB_LOG_FORMAT stands in for the flag, as for every flag.
	cmd := exec.Command(binary, "serve", "--listen", "127.0.0.1:0", "--no-warehouse")
	cmd.Env = append(os.Environ(), "CACHEDB_LOG_FORMAT=json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stopServe(t, cmd)
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["level"] == nil || rec["msg"] == nil {
		t.Errorf("first log line with CACHEDB_LOG_FORMAT=json is not a JSON record: %q (%v)", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
}
