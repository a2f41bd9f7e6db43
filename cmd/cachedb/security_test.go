package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/cachedb/cachedb/internal/auth/jwttest"
	"github.com/cachedb/cachedb/internal/testutil/testcerts"
)

// TestMutualTLSCluster runs a head and two workers that serve TLS and require client
// certificates of one authority: the workers register with the head, the head places work on
// them and they shuffle with each other, all over mutual TLS, with the same certificate pair as
// server and client. A client that presents no certificate, or speaks plaintext, is refused.
func TestMutualTLSCluster(t *testing.T) {
	ca := testcerts.NewAuthority(t)
	dir := t.TempDir()
	node := ca.Write(t, dir, "node", "127.0.0.1")
	client := ca.Write(t, dir, "trainer")
	tlsArgs := []string{"--tls-cert", node.Cert, "--tls-key", node.Key, "--tls-client-ca", node.CA, "--tls-ca", node.CA}
	warehouse, secret := "--warehouse="+warehouseDir, secretFile(t, "cluster-secret", "test secret")
	head, addr := startProcess(t, listeningLine, append([]string{"head", "--listen", "127.0.0.1:0", warehouse, secret}, tlsArgs...)...)
	defer stopServe(t, head)
	for _, id := range []string{"w1", "w2"} {
		w, _ := startProcess(t, workerListeningLine, append([]string{"worker", "--listen", "127.0.0.1:0", "--head", addr, "--id", id, warehouse, secret}, tlsArgs...)...)
		defer stopServe(t, w)
	}
	sql := func(query string, conn ...string) (string, string, error) {
		return runCLI(t, "", nil, append([]string{"sql", "--connect", addr, "-e", query}, conn...)...)
	}
	clientTLS := []string{"--tls-ca", client.CA, "--tls-cert", client.Cert, "--tls-key", client.Key}
	// Registration is asynchronous; the bound only keeps a broken build from hanging.
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, errOut, err := sql("SELECT id, state FROM system.nodes ORDER BY id", clientTLS...)
		if err != nil {
			t.Fatalf("system.nodes over mutual TLS: %v\n%s", err, errOut)
		}
		if strings.Count(out, "alive") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the workers never registered over TLS:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for query, want := range map[string]string{
		"SELECT ride_id, city FROM demo.rides WHERE ride_id <= 40": "40 rows in set",
		"SELECT city, count(*) FROM demo.rides GROUP BY city":      "8 rows in set",
	} {
		out, errOut, err := sql(query, clientTLS...)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("%s over mutual TLS: %v\n%s%s", query, err, out, errOut)
		}
	}
	// No client certificate: the handshake fails.
	if _, errOut, err := sql("SELECT 1", "--tls-ca", client.CA); err == nil {
		t.Errorf("a client without a certificate was served: %s", errOut)
	}
	// Plaintext to a TLS port fails.
	if _, errOut, err := sql("SELECT 1"); err == nil {
		t.Errorf("a plaintext client was served: %s", errOut)
	}
}

// A server serves plaintext only on loopback or with --insecure; TLS flags are checked before it
// starts.
func TestPlaintextNeedsLoopbackOrInsecure(t *testing.T) {
	files := testcerts.Loopback(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--listen", "0.0.0.0:0"}, "refusing to serve plaintext on 0.0.0.0:0"},
		{[]string{"worker", "--listen", ":0", secretFile(t, "cluster-secret", "s")}, "refusing to serve plaintext on :0"},
		{[]string{"serve", "--tls-cert", files.Cert}, "--tls-cert and --tls-key go together"},
		{[]string{"serve", "--tls-client-ca", files.CA}, "--tls-client-ca needs --tls-cert"},
		{[]string{"serve", "--tls-cert", files.Cert, "--tls-key", files.Key, "--insecure"}, "contradict"},
		{[]string{"serve", "--tls-cert", files.Key, "--tls-key", files.Key}, files.Key},
	} {
		_, errOut, err := runCLI(t, "", nil, append(tt.args, "--no-warehouse")...)
		if err == nil || !strings.Contains(errOut, tt.want) {
			t.Errorf("cachedb %v: %v, stderr %q; want an error containing %q", tt.args, err, errOut, tt.want)
		}
	}
	// --insecure serves plaintext on all interfaces, and says so.
	cmd, addr, log := startProcessLog(t, listeningLine, "serve", "--listen", "0.0.0.0:0", "--insecure", "--no-warehouse")
	defer stopServe(t, cmd)
	if !strings.Contains(log(), "serves plaintext") {
		t.Errorf("no plaintext warning in the log:\n%s", log())
	}
	if out, errOut, err := runCLI(t, "", nil, "sql", "--connect", dialable(addr), "-e", "SELECT 1 AS one"); err != nil || !strings.Contains(out, "1 row in set") {
		t.Errorf("plaintext query: %v\n%s%s", err, out, errOut)
	}
}

// startProcessLog is startProcess that also returns what the process logs (startLogged).
func startProcessLog(t *testing.T, line *regexp.Regexp, args ...string) (cmd *exec.Cmd, addr string, log func() string) {
	t.Helper()
	cmd, addrs, log := startLogged(t, []*regexp.Regexp{line}, args...)
	return cmd, addrs[0], log
}

// writeUsers writes a users file of reader, writer and admin, whose passwords are their names
// followed by "-pw", hashed by `cachedb hash-password` at bcrypt's lowest cost.
func writeUsers(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("users:\n")
	for _, name := range []string{"reader", "writer", "admin"} {
		out, errOut, err := runCLI(t, name+"-pw\n", nil, "hash-password", "--cost", "4")
		if err != nil {
			t.Fatalf("hash-password: %v\n%s", err, errOut)
		}
		hash := strings.TrimSpace(out)
		if bcrypt.CompareHashAndPassword([]byte(hash), []byte(name+"-pw")) != nil || strings.Contains(out, name+"-pw") {
			t.Fatalf("hash-password printed %q", out)
		}
		fmt.Fprintf(&b, "  - name: %s\n    password_hash: %q\n    roles: [%s]\n", name, hash, name)
	}
	path := filepath.Join(t.TempDir(), "users.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoginsOverTLS serves with two in-process data nodes, TLS and a users file: `cachedb sql`
// logs in over TLS and reads a query's endpoints from the data nodes with the head's token; a
// client without a login, or with a wrong password, is refused.
func TestLoginsOverTLS(t *testing.T) {
	certs := testcerts.Loopback(t)
	users := writeUsers(t)
	cmd, addr, log := startProcessLog(t, listeningLine, "serve", "--listen", "127.0.0.1:0", "--warehouse", warehouseDir, "--workers", "2",
		"--tls-cert", certs.Cert, "--tls-key", certs.Key, "--tls-ca", certs.CA, "--users", users)
	defer stopServe(t, cmd)
	if !strings.Contains(log(), `logins="3 users"`) || strings.Contains(log(), "requires no login") {
		t.Errorf("the log does not say logins are required:\n%s", log())
	}
	sql := func(query, password string, args ...string) (string, string, error) {
		return runCLI(t, "", []string{"CACHEDB_PASSWORD=" + password}, append([]string{"sql", "--connect", addr, "--tls-ca", certs.CA, "-e", query}, args...)...)
	}
	// Registration is asynchronous; the bound only keeps a broken build from hanging.
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, errOut, err := sql("SELECT id FROM system.nodes WHERE state = 'alive'", "reader-pw", "--user", "reader")
		if err != nil {
			t.Fatalf("system.nodes: %v\n%s", err, errOut)
		}
		if strings.Contains(out, "2 rows in set") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the data nodes never registered:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Divided over the data nodes: the client redeems tickets there with its token.
	out, errOut, err := sql("SELECT ride_id, city FROM demo.rides WHERE ride_id <= 40", "reader-pw", "--user", "reader")
	if err != nil || !strings.Contains(out, "40 rows in set") {
		t.Errorf("logged-in query: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = sql("SELECT 1", "")
	if err == nil || !strings.Contains(errOut, "Unauthenticated") {
		t.Errorf("without a login: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = sql("SELECT 1", "not-the-pw", "--user", "reader")
	if err == nil || !strings.Contains(errOut, "Unauthenticated") || strings.Contains(errOut, "not-the-pw") {
		t.Errorf("a wrong password: %v\n%s%s", err, out, errOut)
	}

	// Roles: a writer changes memory tables but makes and drops no dataset; an admin does.
	as := func(user, query, want string) {
		t.Helper()
		out, errOut, _ := sql(query, user+"-pw", "--user", user)
		if !strings.Contains(out+errOut, want) {
			t.Errorf("%s: %s: want %q in\n%s%s", user, query, want, out, errOut)
		}
	}
	const ctas = "CREATE TABLE ds AS SELECT ride_id, city FROM demo.rides WHERE ride_id <= 1000"
	as("writer", "CREATE TABLE m (x BIGINT); INSERT INTO m VALUES (1)", "1 rows affected")
	as("reader", "INSERT INTO m VALUES (2)", "ERROR (PermissionDenied)")
	as("writer", ctas, "ERROR (PermissionDenied): making or dropping a dataset needs the admin role")
	as("admin", ctas, "1000 rows affected")
	as("reader", "SELECT count(*) AS n FROM ds", "| 1000 |")
	as("writer", "DROP TABLE ds", "ERROR (PermissionDenied)")
	as("admin", "DROP TABLE ds", "Query OK")
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(spec, []byte("name: feats\ntable: demo.rides\ncolumns: [ride_id]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = runCLI(t, "", []string{"CACHEDB_PASSWORD=writer-pw"}, "load", "--head", addr, "--tls-ca", certs.CA, "--user", "writer", "-q", spec)
	if err == nil || !strings.Contains(errOut, "PermissionDenied") {
		t.Errorf("a writer's load: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = runCLI(t, "", []string{"CACHEDB_PASSWORD=admin-pw"}, "load", "--head", addr, "--tls-ca", certs.CA, "--user", "admin", "-q", spec)
	if err != nil || !strings.Contains(out, "dataset feats materialized") {
		t.Errorf("an admin's load: %v\n%s%s", err, out, errOut)
	}
	// Who made a dataset is in the log (the line comes once the load has answered).
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(log(), "dataset loaded dataset=feats") || !strings.Contains(log(), "user=admin") {
		if time.Now().After(deadline) {
			t.Fatalf("no log line says who loaded feats:\n%s", log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A cluster that takes an identity provider's JWTs: every process is given the JWKS, `cachedb
// sql` sends the token (CACHEDB_TOKEN), and the data nodes verify it on the endpoints they serve.
func TestJWTLoginsOnACluster(t *testing.T) {
	idp := jwttest.New(t, "k1")
	jwtArgs := []string{"--jwt-keys", idp.WriteJWKS(t), "--jwt-issuer", "https://idp.test"}
	warehouse, secret := "--warehouse="+warehouseDir, secretFile(t, "cluster-secret", "test secret")
	head, addr := startProcess(t, listeningLine, append([]string{"head", "--listen", "127.0.0.1:0", warehouse, secret}, jwtArgs...)...)
	defer stopServe(t, head)
	for _, id := range []string{"w1", "w2"} {
		w, _ := startProcess(t, workerListeningLine, append([]string{"worker", "--listen", "127.0.0.1:0", "--head", addr, "--id", id, warehouse, secret}, jwtArgs...)...)
		defer stopServe(t, w)
	}
	token := func(role string) string {
		return idp.Sign(t, map[string]any{"iss": "https://idp.test", "sub": "svc-trainer", "cachedb_role": role, "exp": time.Now().Add(time.Hour).Unix()})
	}
	sql := func(query, tok string) (string, string, error) {
		var env []string
		if tok != "" {
			env = []string{"CACHEDB_TOKEN=" + tok}
		}
		return runCLI(t, "", env, "sql", "--connect", addr, "-e", query)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, errOut, err := sql("SELECT id, state FROM system.nodes ORDER BY id", token("reader"))
		if err != nil {
			t.Fatalf("system.nodes with a JWT: %v\n%s", err, errOut)
		}
		if strings.Count(out, "alive") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the workers never registered:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Divided over the data nodes: each endpoint's DoGet carries the JWT to the node.
	if out, errOut, err := sql("SELECT ride_id, city FROM demo.rides WHERE ride_id <= 40", token("reader")); err != nil || !strings.Contains(out, "40 rows in set") {
		t.Errorf("a divided query with a JWT: %v\n%s%s", err, out, errOut)
	}
	if _, errOut, err := sql("CREATE TABLE t (x BIGINT)", token("reader")); err == nil || !strings.Contains(errOut, "PermissionDenied") {
		t.Errorf("a reader's CREATE: %v\n%s", err, errOut)
	}
	if _, errOut, err := sql("SELECT 1", ""); err == nil || !strings.Contains(errOut, "Unauthenticated") {
		t.Errorf("no token: %v\n%s", err, errOut)
	}
	forged := jwttest.New(t, "k1").Sign(t, map[string]any{"iss": "https://idp.test", "sub": "x", "cachedb_role": "admin", "exp": time.Now().Add(time.Hour).Unix()})
	if _, errOut, err := sql("SELECT 1", forged); err == nil || !strings.Contains(errOut, "Unauthenticated") {
		t.Errorf("a forged token: %v\n%s", err, errOut)
	}
}
