package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cachedb/cachedb/internal/errs"
)

// FS is an iceberg-go io.IO over S3. Names are full URIs (s3://bucket/key, s3a://…, s3n://…)
// of any bucket the credentials reach; an FS made by the registered factory also accepts names
// without a scheme ("bucket/key" or "key") relative to the bucket of the location it was made
// for. It is safe for concurrent use.
//
// Requests run under the context FS was made with: iceberg-go makes an IO per operation with
// that operation's context, so cancelling a query stops its reads.
type FS struct {
	ctx    context.Context
	cfg    Config
	client *s3.Client
	bucket string // default bucket for names without a scheme; "" for none
}

var (
	_ iceio.ReadFileIO  = (*FS)(nil)
	_ iceio.WriteFileIO = (*FS)(nil)
	_ iceio.StatIO      = (*FS)(nil)
)

// New returns an FS for cfg. Clients are cached per distinct configuration, so New is cheap
// after the first call for a configuration.
func New(ctx context.Context, cfg Config) (*FS, error) {
	c, err := clientFor(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &FS{ctx: ctx, cfg: cfg, client: c}, nil
}

// tailSize is how much of a file's end the first read fetches when it falls there: a Parquet
// reader asks for the last 8 bytes and then the footer, and one request should serve both.
const tailSize = 64 << 10

// object is a resolved name: the URI used in messages, and the bucket and key.
type object struct {
	uri, bucket, key string
}

// splitURI splits scheme://bucket/key; ok is false for a name without "://".
func splitURI(name string) (bucket, key string, ok bool) {
	_, rest, ok := strings.Cut(name, "://")
	if !ok {
		return "", "", false
	}
	bucket, key, _ = strings.Cut(rest, "/")
	return bucket, key, true
}

func (f *FS) resolve(op, name string) (object, error) {
	if scheme, _, found := strings.Cut(name, "://"); found {
		known := false
		for _, s := range Schemes {
			known = known || strings.EqualFold(scheme, s)
		}
		if !known {
			return object{}, errs.Invalidf("%s %s: not an S3 location (want s3://bucket/key)", op, name)
		}
		bucket, key, _ := splitURI(name)
		if bucket == "" || key == "" {
			return object{}, errs.Invalidf("%s %s: want s3://bucket/key", op, name)
		}
		// Object keys are opaque: no unescaping, "?" and "#" are part of the key.
		return object{uri: name, bucket: bucket, key: key}, nil
	}
	if f.bucket == "" {
		return object{}, errs.Invalidf("%s %s: want s3://bucket/key", op, name)
	}
	key := strings.TrimPrefix(strings.TrimPrefix(name, f.bucket+"/"), "/")
	if key == "" {
		return object{}, errs.Invalidf("%s %s: empty object key", op, name)
	}
	return object{uri: "s3://" + f.bucket + "/" + key, bucket: f.bucket, key: key}, nil
}

func (f *FS) mapErr(op string, o object, err error) error { return mapError(f.cfg, op, o.uri, err) }

// Open looks the object up (one HEAD request, for its size) and returns a File whose reads are
// ranged GET requests.
//
// An immutable Iceberg metadata file (isImmutableMetadata) is read whole with one GET instead and
// kept: opening it again costs no request.
func (f *FS) Open(name string) (iceio.File, error) {
	o, err := f.resolve("opening", name)
	if err != nil {
		return nil, err
	}
	if isImmutableMetadata(o.key) {
		e, err := f.metadata(o, nil)
		if err != nil {
			return nil, err
		}
		return newMetadataFile(o, e), nil
	}
	head, err := f.client.HeadObject(f.ctx, &s3.HeadObjectInput{Bucket: &o.bucket, Key: &o.key})
	if err != nil {
		return nil, f.mapErr("reading", o, err)
	}
	return &File{fs: f, obj: o, size: aws.ToInt64(head.ContentLength), modTime: aws.ToTime(head.LastModified)}, nil
}

// Stat describes the object (one HEAD request). A missing object gives an error satisfying
// errors.Is(err, fs.ErrNotExist).
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	o, err := f.resolve("stat", name)
	if err != nil {
		return nil, err
	}
	if e, ok := cachedMetadata(metadataKey{store: configKey(f.cfg), uri: o.uri}); ok {
		return fileInfo{name: path.Base(o.key), size: int64(len(e.data)), modTime: e.modTime}, nil
	}
	head, err := f.client.HeadObject(f.ctx, &s3.HeadObjectInput{Bucket: &o.bucket, Key: &o.key})
	if err != nil {
		return nil, f.mapErr("reading", o, err)
	}
	return fileInfo{name: path.Base(o.key), size: aws.ToInt64(head.ContentLength), modTime: aws.ToTime(head.LastModified)}, nil
}

// ReadFile reads the whole object with one GET request (more only when a body is cut off
// mid-read and the rest is fetched again).
func (f *FS) ReadFile(name string) ([]byte, error) {
	return f.readFile(name, nil)
}

func (f *FS) readFile(name string, onRequest func()) ([]byte, error) {
	o, err := f.resolve("reading", name)
	if err != nil {
		return nil, err
	}
	if isImmutableMetadata(o.key) {
		e, err := f.metadata(o, onRequest)
		if err != nil {
			return nil, err
		}
		return bytes.Clone(e.data), nil
	}
	return f.getObject(o, onRequest)
}

// metadata returns an immutable metadata file from the cache, or reads it whole (one GET) and
// keeps it.
func (f *FS) metadata(o object, onRequest func()) (*metadataEntry, error) {
	k := metadataKey{store: configKey(f.cfg), uri: o.uri}
	if e, ok := cachedMetadata(k); ok {
		return e, nil
	}
	data, err := f.getObject(o, onRequest)
	if err != nil {
		return nil, err
	}
	e := &metadataEntry{key: k, data: data, modTime: time.Now()}
	keepMetadata(e)
	return e, nil
}

// getObject reads the whole object o.
func (f *FS) getObject(o object, onRequest func()) ([]byte, error) {
	out, err := f.client.GetObject(f.ctx, &s3.GetObjectInput{Bucket: &o.bucket, Key: &o.key})
	if onRequest != nil {
		onRequest()
	}
	if err != nil {
		return nil, f.mapErr("reading", o, err)
	}
	if out.ContentLength == nil || *out.ContentLength < 0 {
		// No length announced: nothing to resume against, read to the end.
		defer func() { _ = out.Body.Close() }()
		data, rerr := io.ReadAll(out.Body)
		if rerr != nil {
			return nil, f.mapErr("reading", o, rerr)
		}
		return data, nil
	}
	size := *out.ContentLength
	buf := make([]byte, size)
	n, rerr := io.ReadFull(out.Body, buf)
	_ = out.Body.Close()
	if rerr == nil {
		return buf, nil
	}
	if err := f.resume(o, buf, 0, n, rerr, onRequest); err != nil {
		return nil, err
	}
	return buf, nil
}

// readRange fills buf with the object's bytes from off; the caller has clamped buf to the
// object's size. It issues one ranged GET and, when a body is cut off mid-read, fetches the rest
// again (up to MaxAttempts GETs in all).
func (f *FS) readRange(o object, buf []byte, off int64, onRequest func()) error {
	return f.resume(o, buf, off, 0, nil, onRequest)
}

// resume fills buf[got:] with the object's bytes at off+got. lastErr, when set, is why the
// previous GET stopped short; it counts as one attempt.
func (f *FS) resume(o object, buf []byte, off int64, got int, lastErr error, onRequest func()) error {
	attempt := 0
	if lastErr != nil {
		attempt = 1
	}
	for got < len(buf) {
		if attempt >= f.cfg.maxAttempts() {
			return &errs.Error{Category: errs.Internal,
				Msg: fmt.Sprintf("reading %s: body cut off at byte %d of %d after %d attempts", o.uri, off+int64(got), off+int64(len(buf)), attempt),
				Err: &redactedError{err: lastErr, secrets: f.cfg.secrets()}}
		}
		if attempt > 0 {
			if err := f.backoff(attempt); err != nil {
				return f.mapErr("reading", o, err)
			}
		}
		attempt++
		rng := fmt.Sprintf("bytes=%d-%d", off+int64(got), off+int64(len(buf))-1)
		out, err := f.client.GetObject(f.ctx, &s3.GetObjectInput{Bucket: &o.bucket, Key: &o.key, Range: &rng})
		if onRequest != nil {
			onRequest()
		}
		if err != nil {
			// The SDK has already retried what is worth retrying.
			return f.mapErr("reading", o, err)
		}
		n, rerr := io.ReadFull(out.Body, buf[got:])
		_ = out.Body.Close()
		got += n
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				rerr = io.ErrUnexpectedEOF // the object is shorter than its size said
			}
			lastErr = rerr
			if ctxErr := f.ctx.Err(); ctxErr != nil {
				return f.mapErr("reading", o, ctxErr)
			}
		}
	}
	return nil
}

// backoff sleeps before attempt+1 with the same capped exponential jitter as the SDK's retryer.
func (f *FS) backoff(attempt int) error {
	maxDelay := float64(f.cfg.maxBackoff())
	d := time.Duration(rand.Float64() * min(maxDelay, float64(time.Second)*float64(uint64(1)<<min(attempt, 30))))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-f.ctx.Done():
		return f.ctx.Err()
	}
}

// Create returns a writer that buffers everything written and stores the object with one PUT
// on Close. A single PUT holds at most 5 GiB, far above Iceberg's data and metadata files.
func (f *FS) Create(name string) (iceio.FileWriter, error) {
	o, err := f.resolve("writing", name)
	if err != nil {
		return nil, err
	}
	return &writer{fs: f, obj: o}, nil
}

// WriteFile stores p as the object with one PUT.
func (f *FS) WriteFile(name string, p []byte) error {
	o, err := f.resolve("writing", name)
	if err != nil {
		return err
	}
	return f.put(o, p)
}

func (f *FS) put(o object, p []byte) error {
	_, err := f.client.PutObject(f.ctx, &s3.PutObjectInput{
		Bucket: &o.bucket, Key: &o.key, Body: bytes.NewReader(p), ContentLength: aws.Int64(int64(len(p))),
	})
	return f.mapErr("writing", o, err)
}

// Remove deletes the object. Deleting a missing object succeeds, as S3 does.
func (f *FS) Remove(name string) error {
	o, err := f.resolve("removing", name)
	if err != nil {
		return err
	}
	_, err = f.client.DeleteObject(f.ctx, &s3.DeleteObjectInput{Bucket: &o.bucket, Key: &o.key})
	return f.mapErr("removing", o, err)
}

type writer struct {
	fs     *FS
	obj    object
	buf    bytes.Buffer
	closed bool
	err    error
}

func (w *writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, fs.ErrClosed
	}
	return w.buf.Write(p)
}

func (w *writer) ReadFrom(r io.Reader) (int64, error) {
	if w.closed {
		return 0, fs.ErrClosed
	}
	return w.buf.ReadFrom(r)
}

// Close stores the object. Later calls return the first call's result.
func (w *writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	w.err = w.fs.put(w.obj, w.buf.Bytes())
	w.buf = bytes.Buffer{}
	return w.err
}

type fileInfo struct {
	name    string
	size    int64
	modTime time.Time
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return 0o444 }
func (i fileInfo) ModTime() time.Time { return i.modTime }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }
