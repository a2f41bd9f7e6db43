package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ridesChecksum sums every kind of column of the demo table (exact: integers and decimals).
const ridesChecksum = "SELECT concat(count(*), ' ', sum(ride_id), ' ', sum(fare), ' ', sum(passengers), ' ', sum(length(city)), ' ', sum(label)) FROM "

// A server whose memory limit is a fraction of a dataset holds the rest on its disk tier, and
// the dataset reads back whole: the same rows (count and checksum) as the source table, every
// row streamed to a real client, with the pool never past its limit.
func TestDatasetLargerThanTheMemoryLimitReadsBackWhole(t *testing.T) {
	const limit = 4 << 20
	diskDir := t.TempDir()
	cmd, addr := startServe(t, "--warehouse="+warehouseDir, "--workers=2", "--memory-limit=4MiB", "--disk-dir="+diskDir)
	defer stopServe(t, cmd)
	waitNodeStates(t, addr, "2 alive nodes", func(s string) bool { return strings.Count(s, "=alive") == 2 })

	spec := filepath.Join(t.TempDir(), "rides.yaml")
	if err := os.WriteFile(spec, []byte("name: rides_all\ntable: demo.rides\npartitions: 8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := runCLI(t, "", nil, "load", spec, "--head", addr, "-q"); err != nil {
		t.Fatalf("load: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	bytes, err := strconv.ParseInt(scalar(t, addr, "SELECT bytes FROM system.datasets WHERE name = 'rides_all'"), 10, 64)
	if err != nil || bytes <= 2*limit {
		t.Fatalf("the dataset holds %d bytes (%v); the test needs more than twice the limit", bytes, err)
	}
	if got := scalar(t, addr, "SELECT count(*) FROM system.partitions WHERE dataset = 'rides_all' AND tier = 'disk'"); got == "0" {
		t.Fatalf("no partition of a dataset of %d bytes is on disk with a limit of %d", bytes, limit)
	}
	if got := scalar(t, addr, "SELECT bytes_on_disk > 0 FROM system.datasets WHERE name = 'rides_all'"); got != "1" {
		t.Errorf("system.datasets shows no bytes on disk: %s", got)
	}

	t.Logf("dataset of %d bytes, %s partitions on disk", bytes, scalar(t, addr, "SELECT count(*) FROM system.partitions WHERE tier = 'disk'"))
	want := scalar(t, addr, ridesChecksum+"demo.rides")
	t.Logf("checksum %s", want)
	if got := scalar(t, addr, ridesChecksum+"rides_all"); got != want {
		t.Errorf("checksum over the dataset = %s, over the table %s", got, want)
	}
	rows, err := strconv.Atoi(strings.Fields(want)[0])
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, addr, "SELECT ride_id FROM rides_all", rows)
	if got := scalar(t, addr, "SELECT sum(reads) > 0 FROM system.partitions WHERE dataset = 'rides_all' AND tier = 'disk'"); got != "1" {
		t.Errorf("no read counted on the partitions on disk: %s", got)
	}
	if got := scalar(t, addr, "SELECT concat(count(*), ' ', sum(reserved > memory_limit), ' ', max(memory_limit)) FROM system.memory"); got != "3 0 "+strconv.Itoa(limit) {
		t.Errorf("system.memory (rows, processes past the limit, limit) = %s", got)
	}
	// Dropping the dataset frees its disk tier.
	if _, errOut, err := runCLI(t, "", nil, "sql", "--connect", addr, "-e", "DROP TABLE rides_all"); err != nil {
		t.Fatalf("DROP: %v %s", err, errOut)
	}
	if got := scalar(t, addr, "SELECT sum(disk_used) FROM system.memory"); got != "0" {
		t.Errorf("disk tier after DROP: %s", got)
	}
}

// Queries that need far more memory than a server has fail clean: a self-join that multiplies
// rows by 25,000, sorted (it spills until the spill limit, then RESOURCE_EXHAUSTED), and a cross
// join whose inner side is many times the memory limit (RESOURCE_EXHAUSTED). The server stays
// up, gives back its memory and spill space, and a dataset it holds reads back whole.
func TestQueriesPastTheLimitsFailCleanAndLoseNothing(t *testing.T) {
	diskDir := t.TempDir()
	cmd, addr := startServe(t, "--warehouse="+warehouseDir, "--workers=2", "--memory-limit=2MiB", "--disk-dir="+diskDir, "--spill-limit=32MiB")
	defer stopServe(t, cmd)
	waitNodeStates(t, addr, "2 alive nodes", func(s string) bool { return strings.Count(s, "=alive") == 2 })
	spec := filepath.Join(t.TempDir(), "keep.yaml")
	if err := os.WriteFile(spec, []byte("name: keep\ntable: demo.rides\npartitions: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := runCLI(t, "", nil, "load", spec, "--head", addr, "-q"); err != nil {
		t.Fatalf("load: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	want := scalar(t, addr, ridesChecksum+"demo.rides")
	for _, q := range []string{
		"SELECT a.ride_id, b.ride_id, a.fare FROM demo.rides a JOIN demo.rides b ON a.city = b.city ORDER BY a.fare, b.ride_id",
		"SELECT a.ride_id, b.city FROM demo.rides a CROSS JOIN demo.rides b ORDER BY a.ride_id LIMIT 3",
	} {
		out, errOut, err := runCLI(t, "", nil, "sql", "--connect", addr, "-e", q)
		if err == nil || !strings.Contains(errOut, "ResourceExhausted") || !strings.Contains(errOut, "limit") {
			t.Errorf("%s: err=%v\nstdout: %.500s\nstderr: %s", q, err, out, errOut)
		}
		t.Logf("%s: %s", q, strings.TrimSpace(errOut))
	}
	if got := scalar(t, addr, ridesChecksum+"keep"); got != want {
		t.Errorf("the dataset after the failed queries: %s, want %s", got, want)
	}
	// Memory and spill files are given back (polled: the nodes end their parts of the failed
	// queries when their readers go away).
	deadline := time.Now().Add(60 * time.Second)
	for {
		reserved := reservedBeyondPartitionsAndCache(t, addr)
		spill := spillFiles(t, diskDir)
		if reserved == 0 && spill == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the failed queries: %d bytes still reserved beyond partitions and the column cache (%s), %d spill files", reserved, scalar(t, addr, "SELECT group_concat(consumers) FROM system.memory"), spill)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// spillFiles counts the spill files under dir.
func spillFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(path, "cachedb-spill-") {
			n++
		}
		return nil
	})
	return n
}
