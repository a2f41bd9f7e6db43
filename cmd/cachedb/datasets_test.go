package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// lisbonSpec materializes a filtered feature set of the embedded demo table.
const lisbonSpec = `name: lisbon
table: demo.rides
columns: [ride_id, fare, passengers]
filter: "city = 'Lisbon' AND passengers > 1"
partitions: 6
`

const lisbonQuery = "SELECT ride_id, fare, passengers FROM demo.rides WHERE city = 'Lisbon' AND passengers > 1"

// scalar runs a one-value query through `cachedb sql` and returns the value as printed.
func scalar(t *testing.T, addr, query string) string {
	t.Helper()
	out, errOut, err := runCLI(t, "", nil, "sql", "--connect", addr, "-e", query)
	if err != nil {
		t.Fatalf("%s: %v\n%s", query, err, errOut)
	}
	m := regexp.MustCompile(`(?m)^\|\s*(\S[^|]*?)\s*\|\s*$`).FindAllStringSubmatch(out, -1)
	if len(m) < 2 {
		t.Fatalf("%s: no value in\n%s", query, out)
	}
	return m[len(m)-1][1]
}

// datasetState returns "state nodes" of a dataset from system.datasets ("" when absent).
func datasetState(t *testing.T, addr, name string) string {
	t.Helper()
	out, _, err := runCLI(t, "", nil, "sql", "--connect", addr, "-e",
		"SELECT concat(state, ' ', nodes) FROM system.datasets WHERE name = '"+name+"'")
	if err != nil || strings.Contains(out, "0 rows in set") {
		return ""
	}
	m := regexp.MustCompile(`\|\s*((?:ready|rebuilding)[^|]*?)\s*\|`).FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return m[1]
}

// The whole life of a dataset on a head and three worker processes: load with progress, read
// from the nodes, reuse, a node killed and its partitions rebuilt, bad specs, DROP.
func TestDatasetOnHeadAndWorkers(t *testing.T) {
	warehouse, secret := "--warehouse="+warehouseDir, secretFile(t, "cluster-secret", "test secret")
	// The worker is killed within a second of joining. The head probes a node as it registers,
	// so its refused port makes it lost at once; --lost-after bounds the wait should that probe
	// not have reached it yet.
	head, addr := startProcess(t, listeningLine, "head", "--listen", "127.0.0.1:0", warehouse, secret,
		"--heartbeat-interval=200ms", "--lost-after=15s")
	defer stopServe(t, head)
	var workers []*os.Process
	for _, id := range []string{"w1", "w2", "w3"} {
		w, _ := startProcess(t, workerListeningLine, "worker", "--listen", "127.0.0.1:0", "--head", addr, "--id", id, warehouse, secret)
		workers = append(workers, w.Process)
	}
	waitNodeStates(t, addr, "3 alive nodes", func(s string) bool { return s == "w1=alive w2=alive w3=alive" })
	want := scalar(t, addr, "SELECT count(*) FROM ("+lisbonQuery+") q")
	wantSum := scalar(t, addr, "SELECT sum(fare) FROM ("+lisbonQuery+") q")

	spec := filepath.Join(t.TempDir(), "lisbon.yaml")
	if err := os.WriteFile(spec, []byte(lisbonSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runCLI(t, "", nil, "load", spec, "--head", addr)
	if err != nil || !strings.Contains(out, "dataset lisbon materialized: "+want+" rows") || !strings.Contains(errOut, "6/6 partitions\n") {
		t.Fatalf("load: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	// Standard error is a pipe here: a line per partition made, no bar redrawn with \r.
	if n := strings.Count(errOut, "materializing lisbon: "); n != 6 || strings.Contains(errOut, "\r") {
		t.Errorf("progress on a pipe is not one line per partition (%d lines):\n%q", n, errOut)
	}
	if got := datasetState(t, addr, "lisbon"); got != "ready w1,w2,w3" {
		t.Errorf("system.datasets = %q, want ready on w1,w2,w3", got)
	}
	if got := scalar(t, addr, "SELECT count(*) FROM lisbon"); got != want {
		t.Errorf("count over the dataset = %s, want %s", got, want)
	}
	assertRows(t, addr, "SELECT ride_id, fare FROM lisbon WHERE passengers > 0", mustAtoi(t, want))

	out, errOut, err = runCLI(t, "", nil, "load", spec, "--head", addr)
	if err != nil || !strings.Contains(out, "reused") || strings.Contains(errOut, "materializing") {
		t.Errorf("loading the same spec again: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}

	// kill -9 one worker: the head finds it silent (suspect) and its port refusing connections
	// (lost, before --lost-after, once a probe had reached it), rebuilds its partitions on the
	// others, and the dataset reads back complete.
	if err := workers[1].Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = workers[1].Wait()
	deadline := time.Now().Add(60 * time.Second)
	for datasetState(t, addr, "lisbon") != "ready w1,w3" {
		if time.Now().After(deadline) {
			t.Fatalf("dataset not rebuilt on w1,w3: %q", datasetState(t, addr, "lisbon"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := scalar(t, addr, "SELECT count(*) FROM lisbon"); got != want {
		t.Errorf("count after the rebuild = %s, want %s", got, want)
	}
	if got := scalar(t, addr, "SELECT sum(fare) FROM lisbon"); got != wantSum {
		t.Errorf("sum after the rebuild = %s, want %s", got, wantSum)
	}
	assertRows(t, addr, "SELECT * FROM lisbon", mustAtoi(t, want))

	// Bad specs fail clearly and leave the head serving.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	_ = os.WriteFile(bad, []byte("name: nope\ntable: demo.no_such_table\n"), 0o644)
	if _, errOut, err := runCLI(t, "", nil, "load", bad, "--head", addr, "-q"); err == nil || !strings.Contains(errOut, "no_such_table") {
		t.Errorf("unknown table: err=%v stderr=%s", err, errOut)
	}
	_ = os.WriteFile(bad, []byte("name: nope\ntable: demo.rides\ncolumnz: [fare]\n"), 0o644)
	if _, errOut, err := runCLI(t, "", nil, "load", bad, "--head", addr, "-q"); err == nil || !strings.Contains(errOut, "columnz") {
		t.Errorf("unknown key: err=%v stderr=%s", err, errOut)
	}
	if got := scalar(t, addr, "SELECT count(*) FROM lisbon"); got != want {
		t.Errorf("count after bad specs = %s, want %s", got, want)
	}

	if _, errOut, err := runCLI(t, "", nil, "sql", "--connect", addr, "-e", "DROP TABLE lisbon"); err != nil {
		t.Fatalf("DROP: %v %s", err, errOut)
	}
	if got := datasetState(t, addr, "lisbon"); got != "" {
		t.Errorf("after DROP system.datasets still shows %q", got)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("%q is not a count", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}
