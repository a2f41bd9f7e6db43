// Package minio runs a real MinIO server for tests: a separate process (MinIO is AGPLv3 and is
// never linked) on a free loopback port with a temporary data directory, stopped when the test
// ends.
package minio

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// EnvBinary names the environment variable that overrides where the MinIO binary is.
const EnvBinary = "CACHEDB_MINIO"

// Region is the region clients should sign for; MinIO accepts any.
const Region = "us-east-1"

// readyTimeout bounds the wait for a started server to answer its health check.
const readyTimeout = 10 * time.Second

// Server is a running MinIO.
type Server struct {
	// Endpoint is the server's URL, http://127.0.0.1:PORT.
	Endpoint string
	// AccessKey and SecretKey are the root credentials, random per server.
	AccessKey, SecretKey string

	cmd  *exec.Cmd
	logs *syncBuffer
}

// BinaryPath is where the MinIO binary is looked for: $CACHEDB_MINIO, else
// $XDG_CACHE_HOME/cachedb/bin/minio (~/.cache/cachedb/bin/minio), where scripts/minio.sh
// installs it.
func BinaryPath() string {
	if p := os.Getenv(EnvBinary); p != "" {
		return p
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache")
	}
	return filepath.Join(dir, "cachedb", "bin", "minio")
}

// Start runs a MinIO server and waits until it is ready. It fails the test when the binary is
// missing: tests that need S3 must not pass by skipping. The server stops in t.Cleanup, and its
// log is printed when the test failed.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := BinaryPath()
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("MinIO not installed: run scripts/minio.sh install (looked for %s: %v)", bin, err)
	}
	dataDir := t.TempDir() // registered first, so it is removed after the server stops

	s := &Server{AccessKey: "cachedb-" + randomHex(t, 6), SecretKey: randomHex(t, 20), logs: &syncBuffer{}}
	port, consolePort := freePort(t), freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s.Endpoint = "http://" + addr

	s.cmd = exec.Command(bin, "server", "--quiet",
		"--address", addr,
		"--console-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(consolePort)),
		dataDir)
	s.cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+s.AccessKey,
		"MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting MinIO %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("MinIO log:\n%s", s.logs.String())
		}
		s.stop(exited)
	})

	if err := waitReady(s.Endpoint, exited); err != nil {
		t.Fatalf("MinIO at %s not ready: %v\nlog:\n%s", s.Endpoint, err, s.logs.String())
	}
	return s
}

// stop asks the server to shut down and kills it if it has not within a few seconds.
func (s *Server) stop(exited <-chan error) {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-exited
	}
}

func waitReady(endpoint string, exited <-chan error) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(readyTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("server exited: %v", err)
		default:
		}
		resp, err := client.Get(endpoint + "/minio/health/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("health check answered %s", resp.Status)
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no answer within %s: %v", readyTimeout, last)
}

// Client returns an S3 client with the root credentials, for test setup and inspection.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.Endpoint),
		Region:       Region,
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// CreateBucket creates a bucket, failing the test if it cannot.
func (s *Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("creating bucket %q: %v", name, err)
	}
}

// PutObject stores an object, failing the test if it cannot.
func (s *Server) PutObject(t testing.TB, bucket, key string, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Client().PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
	}); err != nil {
		t.Fatalf("putting s3://%s/%s: %v", bucket, key, err)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// syncBuffer collects the server's output from two pipes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
