package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/cluster"
)

func progressOf(done, parts int) cluster.Progress {
	return cluster.Progress{Partitions: parts, Done: done, Rows: int64(100 * done), Bytes: int64(2048 * done)}
}

func TestLoadProgressOnAPipeIsOneLinePerPartition(t *testing.T) {
	var b strings.Builder
	p := newLoadProgress(&b, false, "ds")
	for done := 1; done <= 8; done++ {
		p.update(progressOf(done, 8))
	}
	p.finish(false)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 8 || strings.Contains(b.String(), "\r") {
		t.Fatalf("want 8 lines without carriage returns, got %q", b.String())
	}
	if want := "materializing ds: 800 rows, 16.0 KiB: 8/8 partitions"; lines[7] != want {
		t.Errorf("last line %q, want %q", lines[7], want)
	}
}

func TestLoadProgressOnATerminalDrawsABar(t *testing.T) {
	var b strings.Builder
	p := newLoadProgress(&b, true, "ds")
	for done := 1; done <= 4; done++ {
		p.update(progressOf(done, 4))
	}
	p.finish(false)
	if !strings.Contains(b.String(), "\r") || !strings.Contains(b.String(), "4/4") || !strings.Contains(b.String(), "materializing ds") {
		t.Errorf("no bar redrawn in place: %q", b.String())
	}
}

func TestLoadProgressOfAReuseSaysNothingOfMaterializing(t *testing.T) {
	for _, tty := range []bool{false, true} {
		var b strings.Builder
		p := newLoadProgress(&b, tty, "ds")
		p.update(progressOf(6, 6))
		p.finish(true)
		if b.String() != "" {
			t.Errorf("tty=%v: a reuse showed progress %q", tty, b.String())
		}
	}
	// The same single complete message from a load that made the dataset is shown.
	var b strings.Builder
	p := newLoadProgress(&b, false, "ds")
	p.update(progressOf(1, 1))
	p.finish(false)
	if b.String() != "materializing ds: 100 rows, 2.0 KiB: 1/1 partitions\n" {
		t.Errorf("a one-partition load showed %q", b.String())
	}
}

// On a terminal `cachedb load` redraws a bar in place; loading the same spec again shows no
// progress, only "reused".
func TestLoadOnATerminal(t *testing.T) {
	srv, addr := startServe(t, "--warehouse", warehouseDir, "--workers", "2")
	defer stopServe(t, srv)
	spec := filepath.Join(t.TempDir(), "lisbon.yaml")
	if err := os.WriteFile(spec, []byte(lisbonSpec), 0o644); err != nil {
		t.Fatal(err)
	}

	term := startTerminal(t, nil, "load", spec, "--head", addr)
	term.expect("dataset lisbon materialized")
	if err := term.cmd.Wait(); err != nil {
		t.Fatalf("load: %v\n%s", err, term.screen())
	}
	term.mu.Lock()
	raw := term.out.String()
	term.mu.Unlock()
	// The terminal turns each \n into \r\n; a bar redrawn in place writes \r alone.
	redraws := strings.Count(strings.ReplaceAll(raw, "\r\n", "\n"), "\r")
	if !strings.Contains(raw, "materializing lisbon") || !strings.Contains(raw, "6/6") || redraws < 3 {
		t.Errorf("no bar redrawn in place on the terminal:\n%q", raw)
	}

	term = startTerminal(t, nil, "load", spec, "--head", addr)
	term.expect("dataset lisbon reused")
	if err := term.cmd.Wait(); err != nil {
		t.Fatalf("load again: %v\n%s", err, term.screen())
	}
	if s := term.screen(); strings.Contains(s, "materializing") {
		t.Errorf("a reuse shows as materializing:\n%s", s)
	}
}
