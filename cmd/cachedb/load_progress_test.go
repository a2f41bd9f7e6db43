package main

import (
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
