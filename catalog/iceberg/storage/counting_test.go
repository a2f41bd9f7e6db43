package storage_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/cachedb/cachedb/catalog/iceberg/storage"
)

func TestCountingLocalIsExact(t *testing.T) {
	data := randomBytes(t, 100_000)
	name := filepath.Join(t.TempDir(), "f.bin")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var c storage.Counter
	fsys := storage.Counting(iceio.LocalFS{}, &c)

	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1000)
	if _, err := f.ReadAt(buf, 500); err != nil || !bytes.Equal(buf, data[500:1500]) {
		t.Fatalf("ReadAt: %v", err)
	}
	// A ReadAt past the end counts only the bytes it returned.
	if n, err := f.ReadAt(buf, int64(len(data)-10)); n != 10 || err != io.EOF {
		t.Fatalf("ReadAt at the end = %d, %v; want 10, EOF", n, err)
	}
	if _, err := f.Seek(50_000, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(rest, data[50_000:]) {
		t.Fatalf("Read: %v", err)
	}
	if got, want := c.Bytes.Load(), int64(1000+10+50_000); got != want {
		t.Fatalf("Bytes = %d, want %d", got, want)
	}

	whole, err := fsys.(iceio.ReadFileIO).ReadFile(name)
	if err != nil || !bytes.Equal(whole, data) {
		t.Fatalf("ReadFile: %v", err)
	}
	if got, want := c.Bytes.Load(), int64(1000+10+50_000+len(data)); got != want {
		t.Fatalf("Bytes after ReadFile = %d, want %d", got, want)
	}
	if got := c.Requests.Load(); got != 2 {
		t.Fatalf("Requests = %d, want 2 (one Open, one ReadFile)", got)
	}
	if got, want := c.String(), "bytes_fetched=151010 requests=2"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func TestCountingConcurrentReads(t *testing.T) {
	data := randomBytes(t, 1<<20)
	name := filepath.Join(t.TempDir(), "f.bin")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var c storage.Counter
	fsys := storage.Counting(iceio.LocalFS{}, &c)
	const workers, reads, size = 8, 50, 1000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := fsys.Open(name)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			buf := make([]byte, size)
			for i := range reads {
				off := int64((w*reads + i) * size)
				if _, err := f.ReadAt(buf, off); err != nil || !bytes.Equal(buf, data[off:off+size]) {
					t.Errorf("ReadAt(%d): %v", off, err)
				}
			}
		}()
	}
	wg.Wait()
	if got, want := c.Bytes.Load(), int64(workers*reads*size); got != want {
		t.Fatalf("Bytes = %d, want %d", got, want)
	}
	if got := c.Requests.Load(); got != workers {
		t.Fatalf("Requests = %d, want %d opens", got, workers)
	}
}

func TestCountingKeepsOptionalInterfaces(t *testing.T) {
	var c storage.Counter
	local := storage.Counting(iceio.LocalFS{}, &c)
	if _, ok := local.(iceio.ReadFileIO); !ok {
		t.Error("LocalFS wrapper lost ReadFileIO")
	}
	if _, ok := local.(iceio.WriteFileIO); !ok {
		t.Error("LocalFS wrapper lost WriteFileIO")
	}
	// fstest.MapFS reads whole files but cannot write: the wrapper must not claim to.
	mapFS := storage.Counting(iceio.FS(fstest.MapFS{"a": {Data: []byte("hello")}}), &c)
	if _, ok := mapFS.(iceio.WriteFileIO); ok {
		t.Error("read-only FS wrapper claims WriteFileIO")
	}
	rf, ok := mapFS.(iceio.ReadFileIO)
	if !ok {
		t.Fatal("MapFS wrapper lost ReadFileIO")
	}
	before := c.Bytes.Load()
	if b, err := rf.ReadFile("a"); err != nil || string(b) != "hello" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if got := c.Bytes.Load() - before; got != 5 {
		t.Fatalf("ReadFile counted %d bytes, want 5", got)
	}
	// Stat works through any wrapper.
	if fi, err := mapFS.(iceio.StatIO).Stat("a"); err != nil || fi.Size() != 5 {
		t.Fatalf("Stat = %v, %v", fi, err)
	}
	// Nested wrappers both count.
	var outer storage.Counter
	nested := storage.Counting(local, &outer)
	name := filepath.Join(t.TempDir(), "n")
	if err := nested.(iceio.WriteFileIO).WriteFile(name, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if b, err := nested.(iceio.ReadFileIO).ReadFile(name); err != nil || string(b) != "abc" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if outer.Bytes.Load() != 3 || outer.Requests.Load() != 1 {
		t.Fatalf("outer counter %v, want 3 bytes, 1 request", &outer)
	}
}
