package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// binary is the cachedb binary built once for the process tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cachedb-cmd-test")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "cachedb")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		panic("building cachedb: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var listeningLine = regexp.MustCompile(`cachedb listening on (\S+:\d+)`)

// startServe runs `cachedb serve` on a free port and returns the process and its address once
// it logs that it is listening.
func startServe(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	return startProcess(t, listeningLine, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
}

// stopServe sends SIGTERM and expects a clean exit.
func stopServe(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("cachedb serve exited with %v after SIGTERM, want status 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("cachedb serve did not exit within 15s of SIGTERM")
	}
}

func runCLI(t *testing.T, stdin string, env []string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

func TestVersion(t *testing.T) {
	out, _, err := runCLI(t, "", nil, "version")
	if err != nil || !strings.HasPrefix(out, "cachedb ") {
		t.Errorf("cachedb version = %q, %v", out, err)
	}
}

func TestServeStopsCleanlyOnSIGTERM(t *testing.T) {
	cmd, addr := startServe(t, "--no-warehouse")
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("listening on %q", addr)
	}
	stopServe(t, cmd)
}

func TestServeAndQuery(t *testing.T) {
	cmd, addr := startServe(t, "--no-warehouse")
	defer stopServe(t, cmd)

	out, errOut, err := runCLI(t, "", nil, "sql", "--connect", addr, "-e", "SELECT 1 AS one")
	if err != nil {
		t.Fatalf("sql -e: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "| one |") || !strings.Contains(out, "1 row in set") {
		t.Errorf("output:\n%s", out)
	}

	script := "CREATE TABLE cli_t (x BIGINT);\nINSERT INTO cli_t\n  VALUES (1), (2);\nSELECT x FROM cli_t ORDER BY x;\n"
	out, errOut, err = runCLI(t, script, []string{"CACHEDB_CONNECT=" + addr}, "sql")
	if err != nil {
		t.Fatalf("sql from stdin: %v\n%s", err, errOut)
	}
	for _, want := range []string{"2 rows affected", "| 2 |", "2 rows in set"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	_, errOut, err = runCLI(t, "", nil, "sql", "--connect", addr, "-e", "SELECT * FROM missing_table")
	if err == nil || !strings.Contains(errOut, "missing_table") {
		t.Errorf("bad statement: err=%v stderr=%q", err, errOut)
	}
}

// TestServeEmbeddedWarehouse is what `make run` gives a newcomer: a real Iceberg table in a
// local warehouse, generated on first start, queryable and prunable without any S3.
func TestServeEmbeddedWarehouse(t *testing.T) {
	dir := t.TempDir()
	cmd, addr := startServe(t, "--warehouse", dir)
	defer stopServe(t, cmd)

	out, errOut, err := runCLI(t, "", nil, "sql", "--connect", addr, "-e",
		"SELECT count(*) AS n, count(DISTINCT city) AS cities FROM demo.rides")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out, "| 200000 |") || !strings.Contains(out, "|      8 |") {
		t.Errorf("demo.rides:\n%s", out)
	}
	out, errOut, err = runCLI(t, "", nil, "sql", "--connect", addr, "-e",
		"EXPLAIN SELECT ride_id FROM demo.rides WHERE pickup_at >= '2026-01-20'")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out, "files=11/30") {
		t.Errorf("EXPLAIN does not show the day partitions pruned:\n%s", out)
	}
	// Date arithmetic on constants is folded at planning, unpadded date text is read as the
	// comparison reads it, and YEAR(col) = n and DATE(col) = d become ranges: all prune the day
	// partitions.
	for filter, files := range map[string]string{
		"pickup_at >= DATE '2026-01-21' - INTERVAL 1 DAY": "files=11/30",
		"pickup_at >= '2026-1-20'":                        "files=11/30",
		"YEAR(pickup_at) = 2025":                          "files=0/30",
		"DATE(pickup_at) = '2026-01-20'":                  "files=1/30",
	} {
		out, errOut, err = runCLI(t, "", nil, "sql", "--connect", addr, "-e",
			"EXPLAIN SELECT ride_id FROM demo.rides WHERE "+filter)
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		if !strings.Contains(out, files) {
			t.Errorf("EXPLAIN … WHERE %s does not show %s:\n%s", filter, files, out)
		}
	}
	// Time travel to the tagged first snapshot sees only the first append.
	out, errOut, err = runCLI(t, "", nil, "sql", "--connect", addr, "-e",
		"SELECT count(*) AS n FROM demo.`rides@initial`")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out, "| 153335 |") {
		t.Errorf("rides@initial:\n%s", out)
	}
}
