package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitOutput runs git in the repository and returns its trimmed output; the test is skipped
// where the checkout has no git metadata (a source archive).
func gitOutput(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", "../.."}, args...)...).Output()
	if err != nil {
		t.Skipf("git %s: %v (not a git checkout)", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// buildCLI builds cachedb with extra go build arguments into a temporary directory.
func buildCLI(t *testing.T, args ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cachedb")
	build := exec.Command("go", append(append([]string{"build"}, args...), "-o", bin, ".")...)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// A plain `go build` says "dev", with the commit the go command stamped (-buildvcs, which
// GOFLAGS may turn off, and which a git worktree does not get) when there is one.
func TestVersionUnstampedIsDev(t *testing.T) {
	bin := buildCLI(t, "-buildvcs=auto")
	want := "cachedb dev"
	if rev := vcsStamp(t, bin); rev != "" {
		want += " (commit " + rev + ")"
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("cachedb version = %q, want %q", got, want)
	}
}

// vcsStamp is the revision `go version -m` reads from bin ("-dirty" added for a modified
// tree), or "".
func vcsStamp(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var rev, dirty string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || f[0] != "build" {
			continue
		}
		switch k, v, _ := strings.Cut(f[1], "="); k {
		case "vcs.revision":
			rev = v
		case "vcs.modified":
			if v == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// The -X stamps of the Makefile's build are what `cachedb version` prints.
func TestVersionStamped(t *testing.T) {
	out, err := exec.Command(buildCLI(t, "-ldflags", "-X main.version=v1.2.3-rc.1 -X main.commit=0123abcd"), "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), "cachedb v1.2.3-rc.1 (commit 0123abcd)"; got != want {
		t.Errorf("stamped cachedb version = %q, want %q", got, want)
	}
}

// `make build` stamps git describe and the full commit.
func TestMakefileStampsVersion(t *testing.T) {
	describe := gitOutput(t, "describe", "--tags", "--always", "--dirty")
	head := gitOutput(t, "rev-parse", "HEAD")
	out, err := exec.Command("make", "-C", "../..", "-n", "--no-print-directory", "build").Output()
	if err != nil {
		t.Fatalf("make -n build: %v", err)
	}
	want := `-ldflags "-X main.version=` + describe + ` -X main.commit=` + head + `"`
	if !strings.Contains(string(out), want) {
		t.Errorf("make -n build:\n%s\nwant it to build with %s", out, want)
	}
}
