package minio

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestStartServesAndStops(t *testing.T) {
	var endpoint string
	t.Run("server", func(t *testing.T) {
		srv := Start(t)
		endpoint = srv.Endpoint
		srv.CreateBucket(t, "bkt")
		srv.PutObject(t, "bkt", "k", []byte("v"))
		out, err := srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
		if err != nil {
			t.Fatal(err)
		}
		defer out.Body.Close()
		if b, err := io.ReadAll(out.Body); err != nil || string(b) != "v" {
			t.Fatalf("read back %q, %v", b, err)
		}
	})
	// The subtest's cleanup stopped the server.
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", u.Host); err == nil {
		c.Close()
		t.Fatalf("MinIO still listening on %s after its test ended", u.Host)
	}
}

// fatalRecorder is a testing.TB whose Fatal stops the calling goroutine and records the message
// instead of failing the real test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *fatalRecorder) Fatal(args ...any) {
	r.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func TestStartFailsWithoutBinary(t *testing.T) {
	t.Setenv(EnvBinary, filepath.Join(t.TempDir(), "no-minio-here"))
	rec := &fatalRecorder{TB: t}
	done := make(chan *Server)
	go func() {
		defer close(done)
		done <- Start(rec)
	}()
	if srv := <-done; srv != nil {
		t.Fatal("Start returned a server without a binary")
	}
	if !strings.Contains(rec.msg, "MinIO not installed: run scripts/minio.sh install") {
		t.Fatalf("Start without a binary failed with %q", rec.msg)
	}
}
