package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/cachedb/cachedb/cluster"
	"github.com/cachedb/cachedb/internal/errs"
)

func TestParseResume(t *testing.T) {
	for text, want := range map[string]string{
		"":               "[]",
		"640,704":        "[{[640 704]}]",
		"640*2;0,64*2,7": "[{[640 640]} {[0 64 64 7]}]",
	} {
		got, err := ParseResume(text)
		if err != nil || fmt.Sprint(got) != want && !(want == "[]" && got == nil) {
			t.Errorf("ParseResume(%q) = %v, %v; want %s", text, got, err, want)
		}
	}
	for _, bad := range []string{"1,x", "1*0", "1*99999999", ";", "1;;2", "-1"} {
		req, err := ParseEpochOptions(map[string]string{"resume": bad})
		if errs.CategoryOf(err) != errs.InvalidInput {
			t.Errorf("resume=%q: %+v, %v; want invalid input", bad, req.Reader.Resumed, err)
		}
	}
}

// The order key follows what the order depends on: the definition and the partition row counts.
func TestEpochOrderKey(t *testing.T) {
	a := EpochOrderKey("fp", []int64{10, 20}, cluster.MixBlocks)
	if a != EpochOrderKey("fp", []int64{10, 20}, cluster.MixBlocks) {
		t.Error("the same inputs gave two keys")
	}
	for _, other := range []string{EpochOrderKey("fp2", []int64{10, 20}, cluster.MixBlocks), EpochOrderKey("fp", []int64{20, 10}, cluster.MixBlocks), EpochOrderKey("fp", []int64{10, 2, 0}, cluster.MixBlocks), EpochOrderKey("fp", []int64{10, 20, 0}, cluster.MixBlocks), EpochOrderKey("fp", []int64{10, 20}, cluster.MixWindows)} {
		if other == a {
			t.Errorf("key %s for different inputs", other)
		}
	}
	// The key covers the order's version: a checkpoint of version 1's order (whose key was the
	// definition and row counts alone) is refused rather than continued in another order.
	h := sha256.New()
	h.Write([]byte("fp"))
	fmt.Fprintf(h, "\x00%d\x00%d", 10, 20)
	if v1 := hex.EncodeToString(h.Sum(nil))[:16]; v1 == a {
		t.Errorf("order version %d has version 1's key %s", cluster.EpochOrderVersion, v1)
	}
}

// Every read mixes by blocks of small windows unless it asks for mixing=windows, whose windows
// are large by default (a window is read from one node at a time); the size may be given.
func TestEpochMixingDefaults(t *testing.T) {
	for _, c := range []struct {
		opts   map[string]string
		mixing cluster.EpochMixing
		window int
	}{
		{map[string]string{}, cluster.MixBlocks, cluster.DefaultWindowRows},
		{map[string]string{"node_streams": "true"}, cluster.MixBlocks, cluster.DefaultWindowRows},
		{map[string]string{"mixing": "blocks", "window_rows": "512"}, cluster.MixBlocks, 512},
		{map[string]string{"mixing": "Windows"}, cluster.MixWindows, DefaultWindowsWindowRows},
		{map[string]string{"mixing": "windows", "window_rows": "512"}, cluster.MixWindows, 512},
	} {
		req, err := ParseEpochOptions(c.opts)
		if err != nil || req.Mixing != c.mixing || req.WindowRows != c.window {
			t.Errorf("%v: mixing %v, window_rows %d, %v; want %v, %d", c.opts, req.Mixing, req.WindowRows, err, c.mixing, c.window)
		}
	}
	if _, err := ParseEpochOptions(map[string]string{"mixing": "rows"}); errs.CategoryOf(err) != errs.InvalidInput || !strings.Contains(err.Error(), "mixing") {
		t.Errorf("mixing=rows: %v", err)
	}
}
