package slt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// fakeBackend answers a few fixed statements, so the runner's bookkeeping can be tested
// without a server:
//   - "SELECT <n>" returns one int64 row holding n's text parsed by the test table,
//   - "CRASH" makes the backend report that its server died,
//   - "HANG" blocks until the call's context ends,
//   - statements starting with "BAD" fail, every other statement succeeds.
type fakeBackend struct {
	mu       sync.Mutex
	crashed  bool
	connects int
	closed   bool
}

func (b *fakeBackend) Connect(context.Context) (Conn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.connects++
	return &fakeConn{b: b}, nil
}

func (b *fakeBackend) Failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.crashed {
		return errors.New("server exited (signal: killed)")
	}
	return nil
}

func (b *fakeBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

type fakeConn struct{ b *fakeBackend }

func (c *fakeConn) Exec(ctx context.Context, sql string) error {
	switch {
	case sql == "CRASH":
		c.b.mu.Lock()
		c.b.crashed = true
		c.b.mu.Unlock()
		return errors.New("connection refused")
	case sql == "HANG":
		<-ctx.Done()
		return ctx.Err()
	case strings.HasPrefix(sql, "BAD"):
		return errors.New("syntax error near BAD")
	}
	return nil
}

func (c *fakeConn) Query(ctx context.Context, sql string, onBatch func(arrow.RecordBatch) error) error {
	if sql == "HANG" {
		<-ctx.Done()
		return ctx.Err()
	}
	v, ok := strings.CutPrefix(sql, "SELECT ")
	if !ok {
		return errors.New("unknown table")
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, s := range strings.Split(v, ",") {
		b.Field(0).(*array.StringBuilder).Append(s)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return onBatch(rec)
}

func (c *fakeConn) Close() error { return nil }

func runText(t *testing.T, text string, opts Options) (FileResult, *fakeBackend) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.test")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	backend := &fakeBackend{}
	if opts.Engine == "" {
		opts.Engine = "mysql"
	}
	start := func(context.Context) (Backend, error) { return backend, nil }
	res := RunFile(context.Background(), path, "f.test", start, opts)
	return res, backend
}

func TestRunFileCounts(t *testing.T) {
	tests := []struct {
		name             string
		file             string
		ok, fail, skip   int
		wantErrorContain string
	}{
		{"statement ok", "statement ok\nCREATE TABLE t(a INT)\n", 1, 0, 0, ""},
		{"statement fails", "statement ok\nBAD SQL\n", 0, 1, 0, ""},
		{"statement error expected", "statement error\nBAD SQL\n", 1, 0, 0, ""},
		{"statement error not raised", "statement error\nSELECT 1\n", 0, 1, 0, ""},
		{"query passes", "query T nosort\nSELECT a,b\n----\na\nb\n", 1, 0, 0, ""},
		{"query rowsort", "query T rowsort\nSELECT b,a\n----\na\nb\n", 1, 0, 0, ""},
		{"query wrong", "query T nosort\nSELECT b,a\n----\na\nb\n", 0, 1, 0, ""},
		{"column count", "query TT nosort\nSELECT a\n----\na\na\n", 0, 1, 0, ""},
		{"hashed", "hash-threshold 1\n\nquery I nosort\nSELECT 81,81,81,81,81,81,81,81,81\n----\n9 values hashing to 7a8ea30c6803aeddc5fca5b5821d8267\n", 1, 0, 0, ""},
		{"skipif mysql", "skipif mysql\nstatement ok\nBAD\n\nstatement ok\nSELECT 1\n", 1, 0, 1, ""},
		{"onlyif other", "onlyif sqlite\nstatement ok\nBAD\n", 0, 0, 1, ""},
		{"onlyif mysql halt", "statement ok\nX\n\nonlyif mysql\nhalt\n\nstatement ok\nBAD\n\nquery I\nSELECT 1\n----\n1\n", 1, 0, 2, ""},
		{"onlyif other halt", "onlyif mssql\nhalt\n\nstatement ok\nX\n", 1, 0, 0, ""},
		{"labels agree", "query T nosort label-1\nSELECT a\n----\na\n\nquery T nosort label-1\nSELECT a\n----\na\n", 2, 0, 0, ""},
		{"labels disagree", "query T nosort label-1\nSELECT a\n----\na\n\nquery T nosort label-1\nSELECT b\n----\nb\n", 1, 1, 0, ""},
		{"crash fails the rest", "statement ok\nX\n\nstatement ok\nCRASH\n\nstatement ok\nX\n\nskipif mysql\nstatement ok\nX\n\nquery I\nSELECT 1\n----\n1\n", 1, 3, 1, "server exited"},
		{"parse error", "statement ok\nX\n\nnonsense\n", 0, 1, 0, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, backend := runText(t, tt.file, Options{})
			if res.OK != tt.ok || res.Fail != tt.fail || res.Skip != tt.skip {
				t.Errorf("ok %d fail %d skip %d, want ok %d fail %d skip %d (failures %+v)",
					res.OK, res.Fail, res.Skip, tt.ok, tt.fail, tt.skip, res.Failures)
			}
			if len(res.Failures) != res.Fail {
				t.Errorf("%d failures recorded for %d failed records", len(res.Failures), res.Fail)
			}
			if !strings.Contains(res.Error, tt.wantErrorContain) || (tt.wantErrorContain == "" && res.Error != "") {
				t.Errorf("file error %q, want it to contain %q", res.Error, tt.wantErrorContain)
			}
			if tt.wantErrorContain != "unknown command" && !backend.closed {
				t.Error("backend was not closed at the end of the file")
			}
		})
	}
}

func TestRunFileFailureDetails(t *testing.T) {
	res, _ := runText(t, "\n\nquery T nosort\nSELECT b\n----\na\n", Options{})
	if len(res.Failures) != 1 {
		t.Fatalf("failures: %+v", res.Failures)
	}
	f := res.Failures[0]
	want := Failure{File: "f.test", Line: 3, SQL: "SELECT b", Expected: "a", Got: "b", Error: "expected 1 values, got 1 values that differ"}
	if f != want {
		t.Errorf("failure\n got  %+v\n want %+v", f, want)
	}
}

func TestRunFileQueryTimeoutReconnects(t *testing.T) {
	file := "statement ok\nHANG\n\nquery T\nSELECT a\n----\na\n"
	began := time.Now()
	res, backend := runText(t, file, Options{QueryTimeout: 50 * time.Millisecond})
	if res.OK != 1 || res.Fail != 1 {
		t.Fatalf("ok %d fail %d, want 1 and 1: %+v", res.OK, res.Fail, res.Failures)
	}
	if !strings.Contains(res.Failures[0].Error, "timed out") {
		t.Errorf("failure %q does not say it timed out", res.Failures[0].Error)
	}
	if backend.connects != 2 {
		t.Errorf("%d connections opened, want 2 (a new one after the timeout)", backend.connects)
	}
	if elapsed := time.Since(began); elapsed > 5*time.Second {
		t.Errorf("run took %s", elapsed)
	}
}

func TestRunFileTimeoutFailsTheRest(t *testing.T) {
	file := "statement ok\nHANG\n\nstatement ok\nX\n\nstatement ok\nX\n"
	res, _ := runText(t, file, Options{FileTimeout: 50 * time.Millisecond})
	if res.OK != 0 || res.Fail != 3 {
		t.Fatalf("ok %d fail %d, want 0 and 3: %+v", res.OK, res.Fail, res.Failures)
	}
	if !strings.Contains(res.Error, "file timed out") {
		t.Errorf("file error %q does not say the file timed out", res.Error)
	}
}

func TestRunFilesKeepsOrder(t *testing.T) {
	dir := t.TempDir()
	var files []TestFile
	for _, name := range []string{"a.test", "b.test", "c.test", "d.test"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("statement ok\nX\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, TestFile{Path: p, Name: name})
	}
	start := func(context.Context) (Backend, error) { return &fakeBackend{}, nil }
	var reported []string
	results := RunFiles(context.Background(), files, start, Options{Engine: "mysql"}, 3, func(f FileResult) {
		reported = append(reported, f.File)
	})
	for i, f := range files {
		if results[i].File != f.Name || reported[i] != f.Name || results[i].OK != 1 {
			t.Errorf("result %d: %+v (reported %v)", i, results[i], reported)
		}
	}
	s := Summarize("mysql", time.Now(), results)
	if s.OK != 4 || s.PassPercent != 100 {
		t.Errorf("summary %+v", s)
	}
}

func TestStartFailureFailsEveryRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.test")
	if err := os.WriteFile(path, []byte("statement ok\nX\n\nskipif mysql\nstatement ok\nX\n\nquery I\nSELECT 1\n----\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(context.Context) (Backend, error) { return nil, errors.New("no such binary") }
	res := RunFile(context.Background(), path, "f.test", start, Options{Engine: "mysql"})
	if res.Fail != 2 || res.Skip != 1 || !strings.Contains(res.Error, "no such binary") {
		t.Errorf("result %+v", res)
	}
}

func TestRunFileRecordsDuration(t *testing.T) {
	res, _ := runText(t, "statement ok\nHANG\n", Options{QueryTimeout: 20 * time.Millisecond})
	if res.Seconds < 0.02 {
		t.Errorf("file took %.3fs by its result, want at least the 0.02s timeout", res.Seconds)
	}
}
