// Command abandon measures what a distributed shuffle join costs after its clients go away.
//
// It starts a head and data nodes in this process (loopback Flight, the embedded Iceberg demo
// table), then for each case starts a join of every ride with every ride of its city (billions
// of rows) from some clients, has each read one batch of one endpoint and cancel, and samples
// every 100 ms for the following window: the process's CPU time (every node is in this
// process, so it is the cost on all nodes together), its goroutines, and the executions and
// shuffle producers the head and nodes still hold (node.Runtime.Stages). The baseline is the
// same process idle over an equal window just before. It prints a table and writes the figures as
// JSON. It is a benchmark, never a test: nothing here asserts a speed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cachedb/cachedb/catalog"
	"github.com/cachedb/cachedb/catalog/iceberg"
	"github.com/cachedb/cachedb/catalog/iceberg/demo"
	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/cluster/ticket"
	"github.com/cachedb/cachedb/engine"
	cachedbsql "github.com/cachedb/cachedb/flightsql"
	"github.com/cachedb/cachedb/node"
)

const (
	joinOnNodes = "SELECT a.ride_id, b.ride_id FROM demo.rides a JOIN demo.rides b ON a.city = b.city"
	joinOnHead  = "SELECT a.ride_id, b.ride_id FROM demo.rides a JOIN demo.rides b ON a.city = b.city UNION ALL SELECT 1, 2"
)

type caseResult struct {
	Name    string `json:"name"`
	Clients int    `json:"clients"`
	// IdleCPUSeconds is the process's CPU time over the window before the clients started.
	IdleCPUSeconds float64 `json:"idle_cpu_seconds"`
	// CPUSeconds is the CPU time over the window after the last client went away; LastSecond
	// is the part of it in the window's last second.
	CPUSeconds           float64 `json:"cpu_seconds"`
	LastSecondCPUSeconds float64 `json:"last_second_cpu_seconds"`
	// ReleasedAfterMS is when no process held an execution or producer any more (-1: not
	// within the window).
	ReleasedAfterMS  int64 `json:"released_after_ms"`
	GoroutinesBefore int   `json:"goroutines_before"`
	GoroutinesAtEnd  int   `json:"goroutines_at_end"`
	// ProducersAtAbandon and ExecutionsAtAbandon are what the processes held when the last
	// client had gone.
	ProducersAtAbandon  int `json:"producers_at_abandon"`
	ExecutionsAtAbandon int `json:"executions_at_abandon"`
}

type report struct {
	Benchmark string       `json:"benchmark"`
	When      string       `json:"when"`
	GoVersion string       `json:"go_version"`
	CPUs      int          `json:"cpus"`
	Nodes     int          `json:"nodes"`
	WindowMS  int64        `json:"window_ms"`
	Cases     []caseResult `json:"cases"`
}

func main() {
	nodes := flag.Int("nodes", 3, "data nodes")
	window := flag.Duration("window", 5*time.Second, "how long to watch after the clients go away")
	many := flag.Int("clients", 30, "clients in the many-clients cases")
	dir := flag.String("dir", "", "directory for the demo warehouse (default: a temporary one)")
	results := flag.String("results", "bench/results/abandon.json", "JSON result file")
	flag.Parse()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := run(*nodes, *window, *many, *dir, *results); err != nil {
		fmt.Fprintln(os.Stderr, "abandon:", err)
		os.Exit(1)
	}
}

type process struct {
	rt   *node.Runtime
	addr string
}

func run(nodes int, window time.Duration, many int, dir, results string) error {
	ctx := context.Background()
	if dir == "" {
		tmp, err := os.MkdirTemp("", "cachedb-abandon-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	wh, err := demo.Ensure(ctx, dir)
	if err != nil {
		return err
	}
	key := ticket.NewKeyring([]byte("bench cluster secret"), nil)
	// newProcess is an engine with its node runtime, as every process of a cluster runs.
	newProcess := func() (*engine.Engine, *node.Runtime, error) {
		lake, err := iceberg.Open(ctx, wh.CatalogConfig("lake"))
		if err != nil {
			return nil, nil, err
		}
		eng, err := engine.New(engine.Config{NoDemo: true, Sources: []catalog.Catalog{lake}, DefaultCatalog: "lake"})
		if err != nil {
			return nil, nil, err
		}
		rt, err := node.New(node.Config{Engine: eng, Shuffles: cluster.NewShuffles(key)})
		return eng, rt, err
	}
	var procs []process
	var addrs []string
	for range nodes {
		eng, rt, err := newProcess()
		if err != nil {
			return err
		}
		actions := cluster.NodeConfig{ID: fmt.Sprint("node-", len(addrs)), Key: key, Store: rt, Shuffles: rt}
		addr, err := serve(eng, cachedbsql.Options{TicketKey: key, Node: rt, Extend: cluster.NodeActions(actions)})
		if err != nil {
			return err
		}
		procs = append(procs, process{rt, addr})
		addrs = append(addrs, addr)
	}
	headEng, headRT, err := newProcess()
	if err != nil {
		return err
	}
	head, err := serve(headEng, cachedbsql.Options{TicketKey: key, Node: headRT, DataNodes: func() []string { return addrs }})
	if err != nil {
		return err
	}
	procs = append([]process{{headRT, head}}, procs...)

	held := func() (executions, producers int) {
		for _, p := range procs {
			s := p.rt.Stages()
			executions += s.Executions
			producers += s.Producers
		}
		return executions, producers
	}
	// Warm-up: opens the connections between the processes.
	for i := range nodes {
		if err := abandon(head, joinOnNodes, i); err != nil {
			return err
		}
	}
	if err := abandon(head, joinOnHead, 0); err != nil {
		return err
	}
	time.Sleep(window)

	rep := report{Benchmark: "abandon", When: time.Now().UTC().Format(time.RFC3339), GoVersion: runtime.Version(),
		CPUs: runtime.NumCPU(), Nodes: nodes, WindowMS: window.Milliseconds()}
	cases := []struct {
		name    string
		query   string
		clients int
	}{
		{"join, final stage on the nodes", joinOnNodes, 1},
		{"join gathered by the head", joinOnHead, 1},
		{"join, final stage on the nodes", joinOnNodes, many},
		{"join gathered by the head", joinOnHead, many},
	}
	for _, c := range cases {
		res := caseResult{Name: c.name, Clients: c.clients, ReleasedAfterMS: -1, GoroutinesBefore: runtime.NumGoroutine()}
		idle0 := cpuTime()
		time.Sleep(window)
		res.IdleCPUSeconds = (cpuTime() - idle0).Seconds()

		var wg sync.WaitGroup
		errs := make(chan error, c.clients)
		for i := range c.clients {
			wg.Go(func() {
				if err := abandon(head, c.query, i); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			return err
		}
		start, cpu0 := time.Now(), cpuTime()
		res.ExecutionsAtAbandon, res.ProducersAtAbandon = held()
		var lastSecond time.Duration
		for time.Since(start) < window {
			time.Sleep(100 * time.Millisecond)
			if e, p := held(); e == 0 && p == 0 && res.ReleasedAfterMS < 0 {
				res.ReleasedAfterMS = time.Since(start).Milliseconds()
			}
			if lastSecond == 0 && time.Since(start) >= window-time.Second {
				lastSecond = cpuTime()
			}
		}
		end := cpuTime()
		res.CPUSeconds = (end - cpu0).Seconds()
		res.LastSecondCPUSeconds = (end - lastSecond).Seconds()
		res.GoroutinesAtEnd = runtime.NumGoroutine()
		rep.Cases = append(rep.Cases, res)
	}

	fmt.Printf("%d data nodes and the head in one process; CPU over %s windows (idle: the same window before the clients)\n\n", nodes, window)
	fmt.Printf("%-32s %7s %9s %9s %11s %11s %12s %12s\n", "case", "clients", "idle CPU", "CPU after", "last 1 s", "released", "goroutines", "at abandon")
	for _, r := range rep.Cases {
		released := "no"
		if r.ReleasedAfterMS >= 0 {
			released = fmt.Sprintf("%d ms", r.ReleasedAfterMS)
		}
		fmt.Printf("%-32s %7d %8.2fs %8.2fs %10.2fs %11s %5d -> %-4d %5d prod.\n", r.Name, r.Clients, r.IdleCPUSeconds, r.CPUSeconds,
			r.LastSecondCPUSeconds, released, r.GoroutinesBefore, r.GoroutinesAtEnd, r.ProducersAtAbandon)
	}
	if err := os.MkdirAll(filepath.Dir(results), 0o755); err != nil {
		return err
	}
	out, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(results, append(out, '\n'), 0o644)
}

// serve starts a Flight SQL server over eng on a loopback port; it runs until the process ends.
func serve(eng *engine.Engine, opts cachedbsql.Options) (string, error) {
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	srv := cachedbsql.NewServer(eng, opts)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = srv.Serve(lis) }()
	return lis.Addr().String(), nil
}

// abandon runs query, reads one batch of endpoint which and cancels, as a killed client does.
func abandon(head, query string, which int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := dial(head)
	if err != nil {
		return err
	}
	defer cl.Close()
	info, err := cl.Execute(ctx, query)
	if err != nil {
		return err
	}
	ep := info.Endpoint[which%len(info.Endpoint)]
	at := cl
	if len(ep.Location) == 1 {
		if at, err = dial(strings.TrimPrefix(ep.Location[0].Uri, "grpc://")); err != nil {
			return err
		}
		defer at.Close()
	}
	rdr, err := at.DoGet(ctx, ep.Ticket)
	if err != nil {
		return err
	}
	rdr.Next()
	cancel()
	rdr.Release()
	return nil
}

func dial(addr string) (*flightsql.Client, error) {
	return flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
