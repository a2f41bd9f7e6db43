package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cachedb/cachedb/internal/errs"
)

// File is an open S3 object. ReadAt is safe for concurrent use and issues one ranged GET per
// call, except that when the file's first read falls within its last 64 KiB, that tail (or the
// whole object, if smaller) is fetched once and later reads inside it cost nothing: the Parquet
// footer pattern (last 8 bytes, then the footer) is one request. Read and Seek share a position
// and stream a GET from it, so sequential readers (Avro manifests) cost one request per
// contiguous run.
type File struct {
	fs      *FS
	obj     object
	size    int64
	modTime time.Time

	// tail: decided on the first read; holds the bytes [size-len(tail), size) once fetched.
	tailMu      sync.Mutex
	tailDecided bool
	tail        []byte

	// observers are told of each GET the file issues (Counting attaches them).
	obsMu     sync.Mutex
	observers []*Counter

	// Read/Seek state.
	mu      sync.Mutex
	pos     int64
	body    io.ReadCloser // streaming GET positioned at bodyPos, or nil
	bodyPos int64
	closed  bool
}

// Size is the object's size in bytes.
func (f *File) Size() int64 { return f.size }

// Stat describes the object as Open saw it.
func (f *File) Stat() (fs.FileInfo, error) {
	return fileInfo{name: path.Base(f.obj.key), size: f.size, modTime: f.modTime}, nil
}

func (f *File) observe(c *Counter) {
	f.obsMu.Lock()
	f.observers = append(f.observers, c)
	f.obsMu.Unlock()
}

func (f *File) requestIssued() {
	f.obsMu.Lock()
	for _, c := range f.observers {
		c.addRequest()
	}
	f.obsMu.Unlock()
}

// fromTail copies [off, off+len(p)) from the cached tail when it holds all of it, deciding on
// the first read whether to fetch the tail at all. ok reports whether p was served.
func (f *File) fromTail(p []byte, off int64) (ok bool, err error) {
	f.tailMu.Lock()
	defer f.tailMu.Unlock()
	tailStart := max(f.size-tailSize, 0)
	if !f.tailDecided {
		f.tailDecided = true
		if off >= tailStart {
			buf := make([]byte, f.size-tailStart)
			if err := f.fs.readRange(f.obj, buf, tailStart, f.requestIssued); err != nil {
				// Let the next read try again rather than remember a transient failure.
				f.tailDecided = false
				return false, err
			}
			f.tail = buf
		}
	}
	if f.tail == nil || off < tailStart || off+int64(len(p)) > f.size {
		return false, nil
	}
	copy(p, f.tail[off-tailStart:])
	return true, nil
}

// ReadAt reads len(p) bytes at off, with io.ReaderAt's contract: fewer bytes only at the end
// of the object, then with io.EOF.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errs.Invalidf("reading %s: negative offset %d", f.obj.uri, off)
	}
	if f.isClosed() {
		return 0, fs.ErrClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= f.size {
		return 0, io.EOF
	}
	var eof error
	if rest := f.size - off; int64(len(p)) > rest {
		p, eof = p[:rest], io.EOF
	}
	served, err := f.fromTail(p, off)
	if err != nil {
		return 0, err
	}
	if !served {
		if err := f.fs.readRange(f.obj, p, off, f.requestIssued); err != nil {
			return 0, err
		}
	}
	return len(p), eof
}

func (f *File) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// Read reads from the current position.
func (f *File) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, fs.ErrClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	if f.pos >= f.size {
		return 0, io.EOF
	}
	if rest := f.size - f.pos; int64(len(p)) > rest {
		p = p[:rest]
	}
	served, err := f.fromTail(p, f.pos)
	if err != nil {
		return 0, err
	}
	if served {
		f.pos += int64(len(p))
		return len(p), nil
	}
	n, err := f.readStream(p)
	f.pos += int64(n)
	return n, err
}

// readStream reads from a GET streaming from f.pos to the end of the object, opening one when
// there is none at f.pos. A body cut off mid-read is reopened at the new position, up to
// MaxAttempts times in a row before any progress.
func (f *File) readStream(p []byte) (int, error) {
	var lastErr error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if attempt >= f.fs.cfg.maxAttempts() {
				return 0, &errs.Error{Category: errs.Internal,
					Msg: fmt.Sprintf("reading %s: body cut off at byte %d after %d attempts", f.obj.uri, f.pos, attempt),
					Err: &redactedError{err: lastErr, secrets: f.fs.cfg.secrets()}}
			}
			if err := f.fs.backoff(attempt); err != nil {
				return 0, f.fs.mapErr("reading", f.obj, err)
			}
		}
		if err := f.seekBody(); err != nil {
			return 0, err
		}
		n, err := f.body.Read(p)
		f.bodyPos += int64(n)
		if err == nil {
			return n, nil
		}
		if errors.Is(err, io.EOF) && f.bodyPos == f.size {
			f.closeBody()
			return n, nil
		}
		f.closeBody()
		if n > 0 {
			return n, nil // the next Read reopens at the new position
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the object is shorter than its size said
		}
		lastErr = err
		if ctxErr := f.fs.ctx.Err(); ctxErr != nil {
			return 0, f.fs.mapErr("reading", f.obj, ctxErr)
		}
	}
}

// maxSkip is how far forward a streaming body is read and discarded rather than replaced by a
// new request.
const maxSkip = 64 << 10

// seekBody makes f.body a stream positioned at f.pos.
func (f *File) seekBody() error {
	if f.body != nil && f.bodyPos != f.pos {
		if d := f.pos - f.bodyPos; d > 0 && d <= maxSkip {
			n, err := io.CopyN(io.Discard, f.body, d)
			f.bodyPos += n
			if err != nil {
				f.closeBody()
			}
		} else {
			f.closeBody()
		}
	}
	if f.body != nil {
		return nil
	}
	rng := fmt.Sprintf("bytes=%d-", f.pos)
	out, err := f.fs.client.GetObject(f.fs.ctx, &s3.GetObjectInput{Bucket: &f.obj.bucket, Key: &f.obj.key, Range: &rng})
	f.requestIssued()
	if err != nil {
		return f.fs.mapErr("reading", f.obj, err)
	}
	f.body, f.bodyPos = out.Body, f.pos
	return nil
}

func (f *File) closeBody() {
	if f.body != nil {
		_ = f.body.Close()
		f.body = nil
	}
}

// Seek sets the position for Read; it issues no request.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, fs.ErrClosed
	}
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = f.pos + offset
	case io.SeekEnd:
		abs = f.size + offset
	default:
		return 0, errs.Invalidf("seeking in %s: invalid whence %d", f.obj.uri, whence)
	}
	if abs < 0 {
		return 0, errs.Invalidf("seeking in %s: negative position %d", f.obj.uri, abs)
	}
	f.pos = abs
	return abs, nil
}

// Close releases the streaming body, if any. Later reads fail with fs.ErrClosed.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	f.closeBody()
	f.tailMu.Lock()
	f.tail = nil
	f.tailMu.Unlock()
	return nil
}
