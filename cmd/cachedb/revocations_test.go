package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRevocationsFile: serve with --revocations refuses the logins and tokens of a user the file
// revokes entirely, and nobody else's; the file needs logins to mean anything.
func TestRevocationsFile(t *testing.T) {
	users := writeUsers(t)
	revoked := filepath.Join(t.TempDir(), "revoked.yaml")
	if err := os.WriteFile(revoked, []byte("revoked:\n  - {user: writer}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := runCLI(t, "", nil, "serve", "--listen", "127.0.0.1:0", "--warehouse", warehouseDir, "--revocations", revoked); err == nil || !strings.Contains(errOut, "--revocations needs logins") {
		t.Errorf("--revocations without logins: %v\n%s", err, errOut)
	}
	cmd, addr, _ := startProcessLog(t, listeningLine, "serve", "--listen", "127.0.0.1:0", "--warehouse", warehouseDir, "--users", users, "--revocations", revoked)
	defer stopServe(t, cmd)
	sql := func(user string) (string, string, error) {
		return runCLI(t, "", []string{"CACHEDB_PASSWORD=" + user + "-pw"}, "sql", "--connect", addr, "--user", user, "-e", "SELECT 1 AS one")
	}
	if out, errOut, err := sql("writer"); err == nil || !strings.Contains(errOut, "the tokens of user writer are revoked") {
		t.Errorf("a revoked user: %v\n%s%s", err, out, errOut)
	}
	if out, errOut, err := sql("reader"); err != nil || !strings.Contains(out, "1 row in set") {
		t.Errorf("another user: %v\n%s%s", err, out, errOut)
	}
}
