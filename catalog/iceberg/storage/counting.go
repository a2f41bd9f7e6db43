package storage

import (
	"fmt"
	"io/fs"
	"sync/atomic"

	iceio "github.com/apache/iceberg-go/io"
)

// Counter accumulates what reads through a Counting IO cost. It is safe for concurrent use; the
// zero Counter is ready.
type Counter struct {
	// Bytes is every byte handed to a reader: by Read and ReadAt of files opened through the IO
	// and by its ReadFile. Bytes served from a file's cached tail count when they are read.
	Bytes atomic.Int64
	// Requests counts requests to the store: each Open, Stat and ReadFile, plus, for S3 files
	// (this package's File), every GET their reads issue. A local file's reads are not requests.
	Requests atomic.Int64
}

// processBytes and processRequests sum every Counter of the process (ProcessTotals).
var processBytes, processRequests atomic.Int64

// ProcessTotals returns the bytes and requests every read through a Counting IO of this process
// has cost so far: what the object store served it (the cachedb_object_store_* metrics).
func ProcessTotals() (bytes, requests int64) {
	return processBytes.Load(), processRequests.Load()
}

func (c *Counter) addBytes(n int64) {
	c.Bytes.Add(n)
	processBytes.Add(n)
}

func (c *Counter) addRequest() {
	c.Requests.Add(1)
	processRequests.Add(1)
}

// String renders the counts for EXPLAIN ANALYZE.
func (c *Counter) String() string {
	return fmt.Sprintf("bytes_fetched=%d requests=%d", c.Bytes.Load(), c.Requests.Load())
}

// Counting wraps fs so that every open and every byte read through it is added to c. The
// result implements ReadFileIO and WriteFileIO exactly when fs does (writes pass through
// uncounted), and always StatIO (through fs's Stat when it has one, else Open and Stat).
// Other optional interfaces of fs are not carried over.
func Counting(fs iceio.IO, c *Counter) iceio.IO {
	base := &countingIO{inner: fs, c: c}
	_, rf := fs.(iceio.ReadFileIO)
	_, wf := fs.(iceio.WriteFileIO)
	switch {
	case rf && wf:
		return countingReadWrite{base}
	case rf:
		return countingReadFile{base}
	case wf:
		return countingWrite{base}
	default:
		return base
	}
}

// observable is implemented by files that issue requests of their own after Open (File) and by
// the counting wrapper around one, so nested Counting wrappers all see them.
type observable interface{ observe(*Counter) }

type countingIO struct {
	inner iceio.IO
	c     *Counter
}

type (
	countingReadFile  struct{ *countingIO }
	countingWrite     struct{ *countingIO }
	countingReadWrite struct{ *countingIO }
)

var (
	_ iceio.StatIO      = (*countingIO)(nil)
	_ iceio.ReadFileIO  = countingReadFile{}
	_ iceio.WriteFileIO = countingWrite{}
	_ iceio.ReadFileIO  = countingReadWrite{}
	_ iceio.WriteFileIO = countingReadWrite{}
)

func (x *countingIO) Open(name string) (iceio.File, error) {
	x.c.addRequest()
	f, err := x.inner.Open(name)
	if err != nil {
		return nil, err
	}
	if o, ok := f.(observable); ok {
		o.observe(x.c)
	}
	return &countingFile{File: f, c: x.c}, nil
}

func (x *countingIO) Remove(name string) error { return x.inner.Remove(name) }

func (x *countingIO) Stat(name string) (fs.FileInfo, error) {
	if s, ok := x.inner.(iceio.StatIO); ok {
		x.c.addRequest()
		return s.Stat(name)
	}
	f, err := x.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return f.Stat()
}

// readFileObserved is FS's ReadFile reporting each GET, so a resumed body counts too.
type readFileObserved interface {
	readFile(name string, onRequest func()) ([]byte, error)
}

func (x *countingIO) readFile(name string) ([]byte, error) {
	var (
		data []byte
		err  error
	)
	if o, ok := x.inner.(readFileObserved); ok {
		data, err = o.readFile(name, func() { x.c.addRequest() })
	} else {
		x.c.addRequest()
		data, err = x.inner.(iceio.ReadFileIO).ReadFile(name)
	}
	x.c.addBytes(int64(len(data)))
	return data, err
}

func (x countingReadFile) ReadFile(name string) ([]byte, error)  { return x.readFile(name) }
func (x countingReadWrite) ReadFile(name string) ([]byte, error) { return x.readFile(name) }

func (x countingWrite) Create(name string) (iceio.FileWriter, error) {
	return x.inner.(iceio.WriteFileIO).Create(name)
}

func (x countingWrite) WriteFile(name string, p []byte) error {
	return x.inner.(iceio.WriteFileIO).WriteFile(name, p)
}

func (x countingReadWrite) Create(name string) (iceio.FileWriter, error) {
	return countingWrite(x).Create(name)
}

func (x countingReadWrite) WriteFile(name string, p []byte) error {
	return countingWrite(x).WriteFile(name, p)
}

// countingFile counts the bytes its reads return.
type countingFile struct {
	iceio.File
	c *Counter
}

func (f *countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.c.addBytes(int64(n))
	return n, err
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.c.addBytes(int64(n))
	return n, err
}

func (f *countingFile) observe(c *Counter) {
	if o, ok := f.File.(observable); ok {
		o.observe(c)
	}
}
