package deploy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// repoRoot is the repository root, where deploy/build-static.sh runs (as in the image build).
const repoRoot = ".."

// TestStaticBinary builds the binary as deploy/Dockerfile does (deploy/build-static.sh) and
// checks that it is static, stamped, and runs as the image runs it: listening on the image's
// ports' environment, writing only under XDG_CACHE_HOME (the image's /tmp), with no home.
func TestStaticBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "cachedb")
	if err := copyFile(staticBinary(t), bin); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("file", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "statically linked") {
		t.Errorf("file %s: %s; want statically linked", bin, out)
	}
	// glibc's ldd says "not a dynamic executable" and exits 1 for a static binary.
	if out, _ := exec.Command("ldd", bin).CombinedOutput(); !strings.Contains(string(out), "not a dynamic executable") {
		t.Errorf("ldd %s: %s; want not a dynamic executable", bin, out)
	}
	out, err = exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), "cachedb v9.8.7-test (commit 0123456789abcdef)"; got != want {
		t.Errorf("version = %q, want %q", got, want)
	}

	// Run it as the image does (ENV of deploy/Dockerfile, loopback ports instead of :50051 and
	// :8080), with HOME pointing nowhere: the embedded warehouse must go under XDG_CACHE_HOME.
	cache := filepath.Join(dir, "tmp", "cache")
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = []string{"HOME=/nonexistent", "XDG_CACHE_HOME=" + cache, "CACHEDB_LISTEN=127.0.0.1:0", "CACHEDB_HTTP_LISTEN=127.0.0.1:0"}
	flightAddr, httpAddr := startLogged(t, cmd,
		regexp.MustCompile(`cachedb listening on (\S+:\d+)`), regexp.MustCompile(`/metrics on (\S+:\d+)`))
	waitReady(t, httpAddr)
	out, err = exec.Command(bin, "sql", "--connect", flightAddr, "-e", "SELECT count(*) AS n FROM demo.rides").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "| 200000 |") {
		t.Errorf("querying the embedded warehouse: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(cache, "cachedb", "warehouse")); err != nil {
		t.Errorf("the embedded warehouse is not under XDG_CACHE_HOME: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "cachedb" && e.Name() != "tmp" {
			t.Errorf("the server wrote %s in its working directory", e.Name())
		}
	}
}

var (
	staticOnce sync.Once
	staticPath string
	staticErr  error
)

// staticBinary builds, once per test process, the binary deploy/Dockerfile ships, with
// deploy/build-static.sh, stamped v9.8.7-test and commit 0123456789abcdef.
func staticBinary(t *testing.T) string {
	t.Helper()
	staticOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cachedb-deploy-test")
		if err != nil {
			staticErr = err
			return
		}
		staticPath = filepath.Join(dir, "cachedb")
		build := exec.Command("deploy/build-static.sh", staticPath)
		build.Dir = repoRoot
		build.Env = append(os.Environ(), "VERSION=v9.8.7-test", "COMMIT=0123456789abcdef")
		if out, err := build.CombinedOutput(); err != nil {
			staticErr = fmt.Errorf("deploy/build-static.sh: %v\n%s", err, out)
		}
	})
	if staticErr != nil {
		t.Fatal(staticErr)
	}
	return staticPath
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}

// startLogged starts cmd and returns the first group of each pattern as its log shows them.
func startLogged(t *testing.T, cmd *exec.Cmd, want ...*regexp.Regexp) (string, string) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	found := make(chan []string, 1)
	go func() {
		got := make([]string, len(want))
		left := len(want)
		sc := bufio.NewScanner(stderr)
		for left > 0 && sc.Scan() {
			for i, re := range want {
				if m := re.FindStringSubmatch(sc.Text()); m != nil && got[i] == "" {
					got[i] = m[1]
					left--
				}
			}
		}
		if left == 0 {
			found <- got
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case got := <-found:
		return got[0], got[1]
	case <-time.After(2 * time.Minute):
		t.Fatal("cachedb did not log its addresses within 2 minutes")
		return "", ""
	}
}

// waitReady polls /ready until it answers 200, for at most 2 minutes.
func waitReady(t *testing.T, httpAddr string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + httpAddr + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/ready not 200 after 2 minutes (%v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDockerfileContract checks what the image promises and the tests above rely on: the
// binary comes from deploy/build-static.sh, the final stage runs as a non-root user, and the
// environment sends every write under /tmp.
func TestDockerfileContract(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	stages := strings.Split(text, "\nFROM ")
	final := stages[len(stages)-1]
	for _, want := range []string{"deploy/build-static.sh /out/cachedb", "ARG VERSION", "ARG COMMIT",
		// Kubeflow Trainer's pods run `head` and `worker` as commands.
		"ln -s cachedb /out/links/head", "ln -s cachedb /out/links/worker"} {
		if !strings.Contains(text, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`^(gcr\.io/distroless/static|scratch)`),
		regexp.MustCompile(`(?m)^USER 65532:65532$`),
		regexp.MustCompile(`XDG_CACHE_HOME=/tmp/`),
		regexp.MustCompile(`(?m)^ENTRYPOINT \["/usr/local/bin/cachedb"\]$`),
		regexp.MustCompile(`(?m)^COPY --from=build /out/links/ /usr/local/bin/$`),
	} {
		if !want.MatchString(final) {
			t.Errorf("the final stage of the Dockerfile does not match %s", want)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if staticPath != "" {
		os.RemoveAll(filepath.Dir(staticPath))
	}
	os.Exit(code)
}
