package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

var workerListeningLine = regexp.MustCompile(`cachedb worker listening on (\S+:\d+)`)

// startProcess runs cachedb with args and returns the process and the address from the first
// stderr line matching line.
func startProcess(t *testing.T, line *regexp.Regexp, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, addrs, _ := startLogged(t, []*regexp.Regexp{line}, args...)
	return cmd, addrs[0]
}

// startLogged runs cachedb with args until the test ends and waits, at most 30 s, until its
// standard error has shown a line matching each of want; addrs[i] is the first group of want[i]'s
// first match. log returns what the process has logged so far (its first keptLog bytes; later
// lines are read and dropped, so the process never blocks on its pipe).
// keptLog bounds the log startLogged keeps of one process.
const keptLog = 8 << 20

func startLogged(t *testing.T, want []*regexp.Regexp, args ...string) (cmd *exec.Cmd, addrs []string, log func() string) {
	t.Helper()
	cmd = exec.Command(binary, args...)
	cmd.Env = os.Environ()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	var (
		mu    sync.Mutex
		lines strings.Builder
	)
	log = func() string {
		mu.Lock()
		defer mu.Unlock()
		return lines.String()
	}
	found := make(chan []string, 1)
	go func() {
		got := make([]string, len(want))
		left := len(want)
		sc := bufio.NewScanner(stderr)
		for left > 0 && sc.Scan() {
			mu.Lock()
			lines.WriteString(sc.Text() + "\n")
			mu.Unlock()
			for i, re := range want {
				if m := re.FindStringSubmatch(sc.Text()); m != nil && got[i] == "" {
					got[i] = m[1]
					left--
				}
			}
		}
		if left == 0 {
			found <- got
		}
		// Later lines are kept too (up to keptLog bytes), so that a test can wait for one.
		for sc.Scan() {
			mu.Lock()
			if lines.Len() < keptLog {
				lines.WriteString(sc.Text() + "\n")
			}
			mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case addrs = <-found:
		return cmd, addrs, log
	case <-time.After(30 * time.Second):
		t.Fatalf("cachedb %s did not log its addresses within 30s:\n%s", args[0], log())
		return nil, nil, nil
	}
}

// nodeStates queries system.nodes on the head at addr and returns "id=state" sorted by ID.
func nodeStates(t *testing.T, addr string) string {
	t.Helper()
	out, errOut, err := runCLI(t, "", nil, "sql", "--connect", addr, "-e", "SELECT id, state FROM system.nodes")
	if err != nil {
		t.Fatalf("SELECT FROM system.nodes: %v\n%s", err, errOut)
	}
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 4 {
			continue
		}
		id, state := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])
		if id == "id" {
			continue
		}
		rows = append(rows, id+"="+state)
	}
	sort.Strings(rows)
	return strings.Join(rows, " ")
}

// waitNodeStates polls system.nodes until match accepts it. Registration and loss detection
// are asynchronous; the bound only keeps a broken build from hanging (generous: a busy machine
// runs it).
func waitNodeStates(t *testing.T, addr string, what string, match func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := nodeStates(t, addr)
		if match(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("system.nodes never showed %s; last: %q", what, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestServeWithWorkers(t *testing.T) {
	cmd, addr := startServe(t, "--no-warehouse", "--workers", "3")
	defer stopServe(t, cmd)
	got := waitNodeStates(t, addr, "3 alive nodes", func(s string) bool {
		return strings.Count(s, "=alive") == 3
	})
	if n := len(strings.Fields(got)); n != 3 {
		t.Errorf("system.nodes = %q, want exactly 3 nodes", got)
	}
}

func TestHeadAndWorkers(t *testing.T) {
	// Head and workers serve the same embedded warehouse (all three create it at once) and share
	// the cluster secret, so the workers can serve the shares of queries the head divides.
	warehouse, secret := "--warehouse="+warehouseDir, secretFile(t, "cluster-secret", "test secret")
	head, addr := startProcess(t, listeningLine, "head", "--listen", "127.0.0.1:0", warehouse, secret)
	defer stopServe(t, head)
	w1, _ := startProcess(t, workerListeningLine, "worker", "--listen", "127.0.0.1:0", "--head", addr, "--id", "w1", warehouse, secret)
	defer stopServe(t, w1)
	w2, _ := startProcess(t, workerListeningLine, "worker", "--listen", "127.0.0.1:0", "--head", addr, "--id", "w2", warehouse, secret)
	waitNodeStates(t, addr, "w1 and w2 alive", func(s string) bool { return s == "w1=alive w2=alive" })
	divided := "SELECT ride_id, city FROM demo.rides WHERE ride_id <= 40"
	assertRows(t, addr, divided, 40)

	// kill -9: no goodbye. The head finds it silent (suspect), then its port refusing
	// connections (lost at once, without waiting for --lost-after).
	if err := w2.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = w2.Wait()
	waitNodeStates(t, addr, "w2 lost and w1 alive", func(s string) bool { return s == "w1=alive w2=lost" })
	// The lost node gets no more shares: the survivor serves the whole query.
	assertRows(t, addr, divided, 40)
}

// assertRows runs query through `cachedb sql` (which reads each endpoint from the data node it
// names) and checks the row count it prints.
func assertRows(t *testing.T, addr, query string, want int) {
	t.Helper()
	out, errOut, err := runCLI(t, "", nil, "sql", "--connect", addr, "-e", query)
	if err != nil {
		t.Fatalf("%s: %v\n%s", query, err, errOut)
	}
	if !strings.Contains(out, fmt.Sprintf("%d rows in set", want)) {
		t.Errorf("%s: want %d rows:\n%s", query, want, out)
	}
}

// TestClusterSecretRotation runs a cluster in the middle of rotating its secret from "old" to
// "new": the head and w2 sign with the new secret and accept the old one (given as
// CACHEDB_CLUSTER_SECRET_PREVIOUS), w1 still signs with the old one and accepts the new one
// (--cluster-secret-previous-file; a file and the environment cannot both give one, so w1 runs
// without the variable). Every process verifies what
// every other signs: both nodes register, serve their shares and shuffle with each other.
func TestClusterSecretRotation(t *testing.T) {
	warehouse, newSecret, oldAsPrevious := "--warehouse="+warehouseDir, secretFile(t, "cluster-secret", "new"), secretFile(t, "cluster-secret-previous", "old")
	head, addr := startProcess(t, listeningLine, "head", "--listen", "127.0.0.1:0", warehouse, newSecret, oldAsPrevious)
	defer stopServe(t, head)
	w1, _ := startProcess(t, workerListeningLine, "worker", "--listen", "127.0.0.1:0", "--head", addr, "--id", "w1", warehouse,
		secretFile(t, "cluster-secret", "old"), secretFile(t, "cluster-secret-previous", "new"))
	defer stopServe(t, w1)
	w2, _ := startProcess(t, workerListeningLine, "worker", "--listen", "127.0.0.1:0", "--head", addr, "--id", "w2", warehouse, newSecret, oldAsPrevious)
	defer stopServe(t, w2)
	waitNodeStates(t, addr, "w1 and w2 alive", func(s string) bool { return s == "w1=alive w2=alive" })
	assertRows(t, addr, "SELECT ride_id, city FROM demo.rides WHERE ride_id <= 40", 40)
	// Grouped on the nodes: each fetches its bucket from the other with a shuffle ticket.
	assertRows(t, addr, "SELECT city, count(*) FROM demo.rides GROUP BY city", 8)
}

func TestWorkerNeedsTheClusterSecret(t *testing.T) {
	_, errOut, err := runCLI(t, "", nil, "worker", "--listen", "127.0.0.1:0", "--no-warehouse")
	if err == nil || !strings.Contains(errOut, "cluster-secret") {
		t.Errorf("a worker without a secret: err=%v stderr=%q", err, errOut)
	}
	// A previous secret alone signs nothing: refused, on a head as on a worker.
	for _, cmd := range []string{"worker", "head"} {
		_, errOut, err := runCLI(t, "", []string{"CACHEDB_CLUSTER_SECRET_PREVIOUS=old"}, cmd, "--listen", "127.0.0.1:0", "--no-warehouse")
		if err == nil || !strings.Contains(errOut, "CACHEDB_CLUSTER_SECRET_PREVIOUS needs CACHEDB_CLUSTER_SECRET") {
			t.Errorf("%s with only a previous secret: err=%v stderr=%q", cmd, err, errOut)
		}
	}
}

// The failure detector's timeouts must be ordered: heartbeat interval < suspect-after <=
// lost-after. A head given others refuses to start, naming the flags.
func TestDetectorTimeoutsAreChecked(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--suspect-after=10s", "--lost-after=5s"}, "--lost-after 5s must be at least --suspect-after 10s"},
		{[]string{"--heartbeat-interval=2s", "--suspect-after=2s"}, "--suspect-after 2s must be longer than --heartbeat-interval 2s"},
		// --lost-after alone below the default suspect timeout makes that the suspect timeout too.
		{[]string{"--heartbeat-interval=2s", "--lost-after=1s"}, "--suspect-after 1s must be longer than --heartbeat-interval 2s"},
	} {
		_, errOut, err := runCLI(t, "", nil, append([]string{"head", "--listen", "127.0.0.1:0", "--no-warehouse"}, c.args...)...)
		if err == nil || !strings.Contains(errOut, c.want) {
			t.Errorf("head %v: %v, stderr %q; want an error containing %q", c.args, err, errOut, c.want)
		}
	}
}
