package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cachedb/cachedb/catalog/iceberg"
)

// soakDuration is how long TestConcurrentLoadAtTheMemoryLimit runs: CACHEDB_SOAK (a Go
// duration; `make soak-memory` gives 2m), else 10 s.
func soakDuration(t *testing.T) time.Duration {
	if v := os.Getenv("CACHEDB_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("CACHEDB_SOAK=%q: %v", v, err)
		}
		return d
	}
	return 10 * time.Second
}

// 64 clients run queries and read a dataset on a server at its memory limit: aggregates, sorts,
// joins and full scans over a dataset larger than the limit. Queries may be refused with
// RESOURCE_EXHAUSTED and nothing else; the process stays up, and once the clients are gone its
// goroutines, open files and memory reservations go back to what they were before.
func TestConcurrentLoadAtTheMemoryLimit(t *testing.T) {
	diskDir := t.TempDir()
	cmd, addrs, log := startLogged(t, []*regexp.Regexp{listeningLine, httpLine}, "serve", "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--pprof",
		"--warehouse="+warehouseDir, "--workers=2", "--memory-limit=16MiB", "--disk-dir="+diskDir, "--spill-limit=256MiB")
	defer stopServe(t, cmd)
	addr, httpAddr := addrs[0], addrs[1]
	waitNodeStates(t, addr, "2 alive nodes", func(s string) bool { return strings.Count(s, "=alive") == 2 })
	spec := filepath.Join(t.TempDir(), "soak.yaml")
	if err := os.WriteFile(spec, []byte("name: soak\ntable: demo.rides\npartitions: 8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := runCLI(t, "", nil, "load", spec, "--head", addr, "-q"); err != nil {
		t.Fatalf("load: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	want := scalar(t, addr, ridesChecksum+"soak")
	pid := cmd.Process.Pid
	baseGoroutines, baseFiles := goroutines(t, httpAddr), openFiles(t, pid)

	queries := []string{
		"SELECT city, count(*), sum(fare), avg(distance_km) FROM soak GROUP BY city",
		"SELECT ride_id, fare FROM soak ORDER BY fare DESC, ride_id LIMIT 50",
		"SELECT ride_id, city, fare FROM soak ORDER BY city, fare, ride_id",
		"SELECT count(*) FROM soak a JOIN demo.rides b ON a.ride_id = b.ride_id WHERE b.passengers > 1",
		"SELECT * FROM soak",
		"SELECT passengers, count(DISTINCT city) FROM soak GROUP BY passengers",
	}
	ctx, cancel := context.WithTimeout(context.Background(), soakDuration(t))
	defer cancel()
	end, _ := ctx.Deadline()
	var (
		ran, refused atomic.Int64
		wg           sync.WaitGroup
		failMu       sync.Mutex
		failure      error
	)
	for c := range 64 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				q := queries[(c+i)%len(queries)]
				err := readQuery(ctx, addr, q)
				switch {
				case err == nil:
					ran.Add(1)
				case status.Code(err) == codes.ResourceExhausted:
					refused.Add(1)
				case ctx.Err() != nil || !time.Now().Before(end):
					// The soak's end (gRPC may see the deadline a moment before ctx does).
					return
				default:
					failMu.Lock()
					if failure == nil {
						failure = fmt.Errorf("%s: %w", q, err)
					}
					failMu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if failure != nil {
		t.Fatalf("a query failed other than with RESOURCE_EXHAUSTED: %v\n%s", failure, tail(log(), 3000))
	}
	t.Logf("%d queries answered, %d refused with RESOURCE_EXHAUSTED", ran.Load(), refused.Load())
	if ran.Load() == 0 {
		t.Fatal("no query was answered")
	}
	if cmd.ProcessState != nil {
		t.Fatalf("the server exited: %v", cmd.ProcessState)
	}
	if got := scalar(t, addr, ridesChecksum+"soak"); got != want {
		t.Errorf("the dataset after the load: %s, want %s", got, want)
	}
	// Back to the baseline once the clients are gone (polled: executions end when their
	// readers go idle). A few goroutines and files of idle connections may remain.
	deadline := time.Now().Add(90 * time.Second)
	for {
		g, f := goroutines(t, httpAddr), openFiles(t, pid)
		reserved := reservedBeyondPartitionsAndCache(t, addr)
		if g <= baseGoroutines+20 && f <= baseFiles+10 && reserved == 0 && spillFiles(t, diskDir) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the load: %d goroutines (before %d), %d open files (before %d), %d bytes reserved beyond partitions and the column cache, %d spill files",
				g, baseGoroutines, f, baseFiles, reserved, spillFiles(t, diskDir))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// reservedBeyondPartitionsAndCache is the most any process of the server at addr reserves
// beyond its dataset partitions and its column cache (which keeps what it holds after queries).
func reservedBeyondPartitionsAndCache(t *testing.T, addr string) int64 {
	t.Helper()
	row := scalar(t, addr, "SELECT concat(reserved - partition_bytes, ' ', consumers) FROM system.memory ORDER BY reserved - partition_bytes DESC LIMIT 1")
	beyond, consumers, _ := strings.Cut(row, " ")
	n, err := strconv.ParseInt(beyond, 10, 64)
	if err != nil {
		t.Fatalf("system.memory row %q: %v", row, err)
	}
	for _, c := range strings.Split(consumers, ",") {
		if bytes, ok := strings.CutPrefix(c, iceberg.ColumnCacheConsumer.Name+"="); ok {
			cached, err := strconv.ParseInt(bytes, 10, 64)
			if err != nil {
				t.Fatalf("system.memory consumers %q: %v", consumers, err)
			}
			n -= cached
		}
	}
	return n
}

// readQuery runs query on the head at addr and reads every endpoint to its end, from the
// process its location names.
func readQuery(ctx context.Context, addr, query string) error {
	head, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer head.Close()
	info, err := head.Execute(ctx, query)
	if err != nil {
		return err
	}
	for _, ep := range info.Endpoint {
		cl := head
		if len(ep.Location) > 0 && !strings.HasPrefix(ep.Location[0].Uri, "arrow-flight-reuse") {
			at, err := flightsql.NewClient(strings.TrimPrefix(ep.Location[0].Uri, "grpc://"), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				return err
			}
			defer at.Close()
			cl = at
		}
		if err := drainTicket(ctx, cl, ep.Ticket); err != nil {
			return err
		}
	}
	return nil
}

func drainTicket(ctx context.Context, cl *flightsql.Client, tk *flight.Ticket) error {
	rdr, err := cl.DoGet(ctx, tk)
	if err != nil {
		return err
	}
	defer rdr.Release()
	for rdr.Next() {
	}
	return rdr.Err()
}

// goroutines reads the process's goroutine count from its pprof endpoint.
func goroutines(t *testing.T, httpAddr string) int {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`goroutine profile: total (\d+)`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no goroutine count in the profile: %.200s", body)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// openFiles counts the open file descriptors of process pid.
func openFiles(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
