package storage_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cachedb/cachedb/catalog/iceberg/storage"
	"github.com/cachedb/cachedb/internal/errs"
	"github.com/cachedb/cachedb/internal/testutil/minio"
)

func TestMain(m *testing.M) {
	// Never wait on an EC2 metadata endpoint that does not exist here.
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	os.Exit(m.Run())
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

const bucket = "data"

// fixture is one MinIO shared by the subtests of TestS3 (starting one costs seconds).
type fixture struct {
	srv *minio.Server
	cfg storage.Config
}

func (fx *fixture) fs(t *testing.T, cfg storage.Config) *storage.FS {
	t.Helper()
	f, err := storage.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestS3(t *testing.T) {
	srv := minio.Start(t)
	srv.CreateBucket(t, bucket)
	fx := &fixture{srv: srv, cfg: storage.Config{
		Endpoint: srv.Endpoint, Region: minio.Region,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey,
		MaxAttempts: 3, MaxBackoff: 50 * time.Millisecond,
	}}
	t.Run("RangedReads", fx.testRangedReads)
	t.Run("TailReadIsOneRequest", fx.testTailRead)
	t.Run("SmallFileIsOneRequest", fx.testSmallFile)
	t.Run("RegisteredSchemes", fx.testRegisteredSchemes)
	t.Run("MissingObject", fx.testMissing)
	t.Run("WrongSecret", fx.testWrongSecret)
	t.Run("UnreachableEndpoint", fx.testUnreachable)
	t.Run("WriteRoundTrip", fx.testWriteRoundTrip)
	t.Run("RetriesThrottling", fx.testThrottled)
	t.Run("RetriesBodyCutOff", fx.testBodyCutOff)
	t.Run("ConcurrentReadAt", fx.testConcurrentReadAt)
	t.Run("DefaultCredentialChain", fx.testDefaultChain)
	t.Run("Canceled", fx.testCanceled)
	t.Run("Iceberg", fx.testIceberg)
	t.Run("MetadataFilesAreKept", fx.testMetadataKept)
}

// Immutable Iceberg metadata files are read once: after the object is deleted from the store,
// Open, Stat and ReadFile still serve it, while a data file and a version hint (rewritten in
// place by Hadoop catalogs) are read from the store every time.
func (fx *fixture) testMetadataKept(t *testing.T) {
	keys := map[string]bool{ // key → kept
		"kept/metadata/00001-a.metadata.json": true,
		"kept/metadata/snap-1-1-b.avro":       true,
		"kept/metadata/c-m0.avro":             true,
		"kept/metadata/version-hint.text":     false,
		"kept/data/d.parquet":                 false,
		"kept/metadata.json":                  false,
	}
	store := fx.fs(t, fx.cfg)
	contents := map[string][]byte{}
	for key := range keys {
		contents[key] = randomBytes(t, 3000)
		fx.srv.PutObject(t, bucket, key, contents[key])
		f, err := store.Open("s3://data/" + key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(f)
		_ = f.Close()
		if err != nil || !bytes.Equal(got, contents[key]) {
			t.Fatalf("%s: first read: %v", key, err)
		}
	}
	for key := range keys {
		if _, err := fx.srv.Client().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
	}
	for key, kept := range keys {
		uri := "s3://data/" + key
		f, err := store.Open(uri)
		if !kept {
			if err == nil {
				f.Close()
				t.Errorf("%s: opened after its deletion; it must not be kept", key)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: not kept: %v", key, err)
			continue
		}
		got, _ := io.ReadAll(f)
		_ = f.Close()
		data, rerr := store.ReadFile(uri)
		info, serr := store.Stat(uri)
		if !bytes.Equal(got, contents[key]) || rerr != nil || !bytes.Equal(data, contents[key]) || serr != nil || info.Size() != 3000 {
			t.Errorf("%s: kept copy differs: open %d bytes, ReadFile %v, Stat %v", key, len(got), rerr, serr)
		}
	}
}

func (fx *fixture) testRangedReads(t *testing.T) {
	data := randomBytes(t, 300_000)
	fx.srv.PutObject(t, bucket, "ranged/obj.bin", data)
	var c storage.Counter
	fsys := storage.Counting(fx.fs(t, fx.cfg), &c)
	f, err := fsys.Open("s3://data/ranged/obj.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() != int64(len(data)) || fi.Name() != "obj.bin" {
		t.Fatalf("Stat = %v, %v", fi, err)
	}
	for _, r := range []struct{ off, n int }{{0, 1}, {1000, 5000}, {123_456, 70_000}, {299_999, 1}} {
		buf := make([]byte, r.n)
		if n, err := f.ReadAt(buf, int64(r.off)); err != nil || n != r.n || !bytes.Equal(buf, data[r.off:r.off+r.n]) {
			t.Fatalf("ReadAt(%d, %d) = %d, %v (bytes equal: %v)", r.off, r.n, n, err, bytes.Equal(buf, data[r.off:r.off+r.n]))
		}
	}
	// Across the end: the bytes there are, then io.EOF.
	buf := make([]byte, 100)
	if n, err := f.ReadAt(buf, int64(len(data)-40)); n != 40 || err != io.EOF || !bytes.Equal(buf[:40], data[len(data)-40:]) {
		t.Fatalf("ReadAt across the end = %d, %v", n, err)
	}
	if n, err := f.ReadAt(buf, int64(len(data))); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt at the end = %d, %v", n, err)
	}
	// Read and Seek.
	if _, err := f.Seek(200_000, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(rest, data[200_000:]) {
		t.Fatalf("Read from 200000: %d bytes, %v", len(rest), err)
	}
	if pos, err := f.Seek(-10, io.SeekEnd); err != nil || pos != int64(len(data)-10) {
		t.Fatalf("Seek from end = %d, %v", pos, err)
	}
	tail, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(tail, data[len(data)-10:]) {
		t.Fatalf("Read after SeekEnd: %v", err)
	}
	if got, want := c.Bytes.Load(), int64(1+5000+70_000+1+40+100_000+10); got != want {
		t.Fatalf("Bytes = %d, want %d", got, want)
	}
	if got := c.Requests.Load(); got < 6 || got > 8 {
		t.Fatalf("Requests = %d: want one HEAD, one GET per ranged read and one per streamed run", got)
	}
	// Stat through the FS and the wrapper.
	if fi, err := fsys.(iceio.StatIO).Stat("s3://data/ranged/obj.bin"); err != nil || fi.Size() != int64(len(data)) {
		t.Fatalf("StatIO.Stat = %v, %v", fi, err)
	}
}

// testTailRead reads the way a Parquet reader does: size, last 8 bytes, then the footer.
func (fx *fixture) testTailRead(t *testing.T) {
	data := randomBytes(t, 1<<20)
	fx.srv.PutObject(t, bucket, "tail/part.parquet", data)
	var c storage.Counter
	f, err := storage.Counting(fx.fs(t, fx.cfg), &c).Open("s3://data/tail/part.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := c.Requests.Load(); got != 1 {
		t.Fatalf("Open cost %d requests, want 1 (HEAD)", got)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil || size != int64(len(data)) {
		t.Fatalf("Seek(0, End) = %d, %v", size, err)
	}
	magic := make([]byte, 8)
	if _, err := f.ReadAt(magic, size-8); err != nil || !bytes.Equal(magic, data[len(data)-8:]) {
		t.Fatalf("last 8 bytes: %v", err)
	}
	footer := make([]byte, 20_000)
	if _, err := f.ReadAt(footer, size-8-int64(len(footer))); err != nil || !bytes.Equal(footer, data[len(data)-8-len(footer):len(data)-8]) {
		t.Fatalf("footer: %v", err)
	}
	if got := c.Requests.Load(); got != 2 {
		t.Fatalf("HEAD + tail reads cost %d requests, want 2: the tail must be fetched once", got)
	}
	// A read before the tail is a ranged GET of its own.
	chunk := make([]byte, 4096)
	if _, err := f.ReadAt(chunk, 4); err != nil || !bytes.Equal(chunk, data[4:4100]) {
		t.Fatalf("column chunk: %v", err)
	}
	if got := c.Requests.Load(); got != 3 {
		t.Fatalf("Requests = %d, want 3", got)
	}
	if got, want := c.Bytes.Load(), int64(8+20_000+4096); got != want {
		t.Fatalf("Bytes = %d, want %d (bytes read, not bytes prefetched)", got, want)
	}
}

// testSmallFile reads a file smaller than the tail window from the start, as an Avro manifest
// is read: the first read fetches the whole file and nothing else is requested.
func (fx *fixture) testSmallFile(t *testing.T) {
	data := randomBytes(t, 10_000)
	fx.srv.PutObject(t, bucket, "small/m.avro", data)
	var c storage.Counter
	f, err := storage.Counting(fx.fs(t, fx.cfg), &c).Open("s3://data/small/m.avro")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got bytes.Buffer
	buf := make([]byte, 1000) // small reads, as a decoder makes them
	for {
		n, err := f.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got.Bytes(), data) {
		t.Fatal("sequential read returned different bytes")
	}
	if r := c.Requests.Load(); r != 2 {
		t.Fatalf("Requests = %d, want 2 (HEAD, one GET)", r)
	}
	if b := c.Bytes.Load(); b != int64(len(data)) {
		t.Fatalf("Bytes = %d, want %d", b, len(data))
	}
}

func (fx *fixture) testRegisteredSchemes(t *testing.T) {
	storage.Register()
	storage.Register() // idempotent
	data := []byte("hello through s3a")
	fx.srv.PutObject(t, bucket, "schemes/hello.txt", data)
	props := fx.cfg.Properties()
	for _, loc := range []string{"s3://data/schemes/hello.txt", "s3a://data/schemes/hello.txt", "s3n://data/schemes/hello.txt"} {
		fsys, err := iceio.LoadFS(context.Background(), props, loc)
		if err != nil {
			t.Fatalf("LoadFS(%s): %v", loc, err)
		}
		if _, ok := fsys.(*storage.FS); !ok {
			t.Fatalf("LoadFS(%s) gave %T, want *storage.FS", loc, fsys)
		}
		f, err := fsys.Open(loc)
		if err != nil {
			t.Fatalf("Open(%s): %v", loc, err)
		}
		got, err := io.ReadAll(f)
		f.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: read %q, %v", loc, got, err)
		}
		// Names without a scheme are relative to the location's bucket.
		for _, bare := range []string{"schemes/hello.txt", "data/schemes/hello.txt"} {
			b, err := fsys.(iceio.ReadFileIO).ReadFile(bare)
			if err != nil || !bytes.Equal(b, data) {
				t.Fatalf("ReadFile(%s) via %s: %q, %v", bare, loc, b, err)
			}
		}
	}
	signed := fx.cfg.Properties()
	signed["s3.remote-signing-enabled"] = "true"
	if _, err := iceio.LoadFS(context.Background(), signed, "s3://data/x"); errs.CategoryOf(err) != errs.Unsupported {
		t.Fatalf("remote signing: %v, want unsupported", err)
	}
	// A property that does not parse is refused by the factory, naming the key.
	bad := fx.cfg.Properties()
	bad["cachedb.s3.max-attempts"] = "lots"
	if _, err := iceio.LoadFS(context.Background(), bad, "s3://data/x"); err == nil || !strings.Contains(err.Error(), "cachedb.s3.max-attempts") {
		t.Fatalf("bad property: %v", err)
	}
}

func (fx *fixture) testMissing(t *testing.T) {
	fsys := fx.fs(t, fx.cfg)
	const uri = "s3://data/no/such/key.parquet"
	_, openErr := fsys.Open(uri)
	_, statErr := fsys.Stat(uri)
	_, readErr := fsys.ReadFile(uri)
	for op, err := range map[string]error{"Open": openErr, "Stat": statErr, "ReadFile": readErr} {
		t.Logf("%s: %v", op, err)
		if errs.CategoryOf(err) != errs.NotFound || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), uri) {
			t.Errorf("%s of a missing key: %v (category %v), want not found naming %s", op, err, errs.CategoryOf(err), uri)
		}
	}
	_, err := fsys.Open("s3://no-such-bucket/k")
	if errs.CategoryOf(err) != errs.NotFound || !strings.Contains(err.Error(), "no-such-bucket") {
		t.Errorf("missing bucket: %v", err)
	}
	_, err = fsys.ReadFile("s3://no-such-bucket/k")
	if errs.CategoryOf(err) != errs.NotFound || !strings.Contains(err.Error(), `bucket "no-such-bucket" not found`) {
		t.Errorf("missing bucket on GET: %v", err)
	}
	// Names that are not S3 locations are refused before any request.
	for _, bad := range []string{"gs://data/x", "s3://data", "s3:///x", "relative/key"} {
		if _, err := fsys.Open(bad); errs.CategoryOf(err) != errs.InvalidInput {
			t.Errorf("Open(%q) = %v, want invalid input", bad, err)
		}
	}
}

func (fx *fixture) testWrongSecret(t *testing.T) {
	fx.srv.PutObject(t, bucket, "secret/obj", []byte("x"))
	wrong := fx.cfg
	wrong.SecretAccessKey = "wrong-secret-" + fx.srv.SecretKey[:8] + "-zz"
	withToken := wrong
	withToken.SessionToken = "session-token-that-must-not-leak"
	badKeyID := fx.cfg
	badKeyID.AccessKeyID = "NOSUCHKEYID"
	for name, cfg := range map[string]storage.Config{"secret": wrong, "token": withToken, "key id": badKeyID} {
		fsys := fx.fs(t, cfg)
		_, openErr := fsys.Open("s3://data/secret/obj")
		_, readErr := fsys.ReadFile("s3://data/secret/obj")
		writeErr := fsys.WriteFile("s3://data/secret/new", []byte("y"))
		for op, err := range map[string]error{"Open": openErr, "ReadFile": readErr, "WriteFile": writeErr} {
			if err == nil {
				t.Fatalf("%s/%s with bad credentials succeeded", name, op)
			}
			msg := err.Error()
			t.Logf("%s/%s: %s", name, op, msg)
			wantVerb := "reading"
			if op == "WriteFile" {
				wantVerb = "writing"
			}
			if errs.CategoryOf(err) != errs.InvalidInput || !strings.Contains(msg, "access denied "+wantVerb+" s3://data/secret/") ||
				!strings.Contains(msg, "(check credentials)") {
				t.Errorf("%s/%s: %q (category %v), want access denied", name, op, msg, errs.CategoryOf(err))
			}
			for _, secret := range []string{cfg.SecretAccessKey, fx.srv.SecretKey, withToken.SessionToken} {
				if strings.Contains(msg, secret) {
					t.Errorf("%s/%s: error shows a secret: %q", name, op, msg)
				}
			}
		}
	}
}

func (fx *fixture) testUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	l.Close() // nothing listens there now
	cfg := fx.cfg
	cfg.Endpoint = endpoint
	cfg.MaxAttempts = 2
	start := time.Now()
	_, err = fx.fs(t, cfg).Open("s3://data/k")
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("unreachable endpoint took %v to fail", elapsed)
	}
	if err == nil {
		t.Fatal("Open against a closed port succeeded")
	}
	msg := err.Error()
	t.Logf("%s", msg)
	if !strings.Contains(msg, "cannot reach S3 endpoint "+endpoint) || !strings.Contains(msg, "s3://data/k") ||
		!strings.Contains(msg, "after 2 attempts") {
		t.Errorf("unclear error: %q", msg)
	}
	if strings.Contains(msg, cfg.SecretAccessKey) {
		t.Errorf("error shows the secret: %q", msg)
	}
}

func (fx *fixture) testWriteRoundTrip(t *testing.T) {
	fsys := fx.fs(t, fx.cfg)
	data := randomBytes(t, 200_000)
	w, err := fsys.Create("s3a://data/written/a.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data[:1000]); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ReadFrom(bytes.NewReader(data[1000:])); err != nil {
		t.Fatal(err)
	}
	// Nothing is stored before Close.
	if _, err := fsys.Stat("s3://data/written/a.bin"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("object visible before Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := w.Write([]byte("late")); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	got, err := fsys.ReadFile("s3://data/written/a.bin")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	if err := fsys.WriteFile("s3://data/written/empty", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := fsys.ReadFile("s3://data/written/empty"); err != nil || len(got) != 0 {
		t.Fatalf("empty object: %q, %v", got, err)
	}
	f, err := fsys.Open("s3://data/written/empty")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("Read of an empty object = %d, %v", n, err)
	}
	f.Close()
	if err := fsys.Remove("s3://data/written/a.bin"); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Open("s3://data/written/a.bin"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open after Remove: %v", err)
	}
}

// faultProxy forwards to MinIO, keeping the Host header the client signed, and injects the
// faults a real store produces under load.
type faultProxy struct {
	srv      *httptest.Server
	slowDown atomic.Int32 // answer this many more requests with 503 SlowDown
	cutAfter atomic.Int64 // cut the next ranged GET's body after this many bytes (0: off)
	gets     atomic.Int32
	requests atomic.Int32
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host
		},
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.Method == http.MethodGet && resp.Request.Header.Get("Range") != "" {
				if n := p.cutAfter.Swap(0); n > 0 {
					resp.Body = &cutBody{r: resp.Body, left: n}
				}
			}
			return nil
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		if r.Method == http.MethodGet {
			p.gets.Add(1)
		}
		if p.slowDown.Add(-1) >= 0 {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
			return
		}
		p.slowDown.Store(0)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// cutBody fails after left bytes, as a connection reset mid-transfer does.
type cutBody struct {
	r    io.ReadCloser
	left int64
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errors.New("connection reset (injected)")
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *cutBody) Close() error { return c.r.Close() }

func (fx *fixture) testThrottled(t *testing.T) {
	data := randomBytes(t, 200_000)
	fx.srv.PutObject(t, bucket, "throttled/obj", data)
	proxy := newFaultProxy(t, fx.srv.Endpoint)
	cfg := fx.cfg
	cfg.Endpoint = proxy.srv.URL
	fsys := fx.fs(t, cfg)

	proxy.slowDown.Store(2) // HEAD refused twice, third attempt passes
	f, err := fsys.Open("s3://data/throttled/obj")
	if err != nil {
		t.Fatalf("Open under throttling: %v", err)
	}
	defer f.Close()
	if got := proxy.requests.Load(); got != 3 {
		t.Fatalf("proxy saw %d requests, want 3 (two throttled, one served)", got)
	}
	proxy.slowDown.Store(1)
	buf := make([]byte, 1000)
	if _, err := f.ReadAt(buf, 10); err != nil || !bytes.Equal(buf, data[10:1010]) {
		t.Fatalf("ReadAt under throttling: %v", err)
	}
	// Throttled beyond MaxAttempts: a resource-exhausted error naming the object.
	proxy.slowDown.Store(int32(cfg.MaxAttempts))
	_, err = f.ReadAt(buf, 5000)
	if errs.CategoryOf(err) != errs.ResourceExhausted || !strings.Contains(err.Error(), "s3://data/throttled/obj") {
		t.Fatalf("persistent throttling: %v (category %v)", err, errs.CategoryOf(err))
	}
}

func (fx *fixture) testBodyCutOff(t *testing.T) {
	data := randomBytes(t, 500_000)
	fx.srv.PutObject(t, bucket, "cut/obj", data)
	proxy := newFaultProxy(t, fx.srv.Endpoint)
	cfg := fx.cfg
	cfg.Endpoint = proxy.srv.URL
	f, err := fx.fs(t, cfg).Open("s3://data/cut/obj")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	proxy.gets.Store(0)
	proxy.cutAfter.Store(50_000)
	buf := make([]byte, 300_000)
	if _, err := f.ReadAt(buf, 1000); err != nil || !bytes.Equal(buf, data[1000:301_000]) {
		t.Fatalf("ReadAt with a body cut off: %v", err)
	}
	if got := proxy.gets.Load(); got != 2 {
		t.Fatalf("proxy saw %d GETs, want 2 (cut off, then the rest)", got)
	}

	// Streaming Read recovers the same way.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	proxy.cutAfter.Store(123_457)
	all, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(all, data) {
		t.Fatalf("Read with a body cut off: %d bytes, %v", len(all), err)
	}
}

func (fx *fixture) testConcurrentReadAt(t *testing.T) {
	data := randomBytes(t, 400_000)
	fx.srv.PutObject(t, bucket, "concurrent/obj", data)
	var c storage.Counter
	f, err := storage.Counting(fx.fs(t, fx.cfg), &c).Open("s3://data/concurrent/obj")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const workers, reads, size = 4, 10, 7000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, size)
			for i := range reads {
				// Spread over the whole object, tail included, so the first read races the
				// tail fetch.
				off := int64(len(data)-size) - int64((w*reads+i)*9000)
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
}

func (fx *fixture) testDefaultChain(t *testing.T) {
	fx.srv.PutObject(t, bucket, "chain/obj", []byte("from the environment"))
	t.Setenv("AWS_ACCESS_KEY_ID", fx.srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", fx.srv.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_PROFILE", "")
	cfg := storage.Config{Endpoint: fx.cfg.Endpoint, Region: minio.Region, MaxAttempts: 2}
	b, err := fx.fs(t, cfg).ReadFile("s3://data/chain/obj")
	if err != nil || string(b) != "from the environment" {
		t.Fatalf("ReadFile with credentials from the environment: %q, %v", b, err)
	}
}

func (fx *fixture) testCanceled(t *testing.T) {
	fx.srv.PutObject(t, bucket, "cancel/obj", randomBytes(t, 1000))
	ctx, cancel := context.WithCancel(context.Background())
	fsys, err := storage.New(ctx, fx.cfg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Open("s3://data/cancel/obj")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cancel()
	_, err = f.ReadAt(make([]byte, 10), 0)
	if errs.CategoryOf(err) != errs.Canceled || !strings.Contains(err.Error(), "s3://data/cancel/obj") {
		t.Fatalf("read after cancel: %v (category %v)", err, errs.CategoryOf(err))
	}
}
