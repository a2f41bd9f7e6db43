package tlsconf

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cachedb/cachedb/internal/testutil/testcerts"
)

// handshake runs one TLS handshake between a server and a client configuration over an
// in-memory connection and returns the common name of the certificate the server presented
// (and of the client's, when it sent one), or the first error of either side.
func handshake(t *testing.T, server, client *tls.Config) (serverCN, clientCN string, err error) {
	t.Helper()
	// Loopback TCP, not net.Pipe: a side that fails writes its alert while the other may still be
	// writing, which an unbuffered pipe turns into a deadlock.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	b, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a, err := lis.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	// A bound only against a hang of a broken build; the handshake itself takes milliseconds.
	_ = a.SetDeadline(time.Now().Add(time.Minute))
	_ = b.SetDeadline(time.Now().Add(time.Minute))
	srv := tls.Server(a, server)
	cl := tls.Client(b, client)
	serverErr := make(chan error, 1)
	go func() {
		err := srv.Handshake()
		if err != nil {
			_ = a.Close() // unblock the client
		}
		serverErr <- err
	}()
	clientErr := cl.Handshake()
	if clientErr != nil {
		_ = b.Close()
	} else {
		// The server's last messages (session tickets, or the alert refusing the client's
		// certificate under TLS 1.3) arrive after the client's handshake returned.
		go func() { _, _ = io.Copy(io.Discard, cl) }()
	}
	if err := <-serverErr; err != nil {
		return "", "", err
	}
	if clientErr != nil {
		return "", "", clientErr
	}
	serverCN = cl.ConnectionState().PeerCertificates[0].Subject.CommonName
	if peers := srv.ConnectionState().PeerCertificates; len(peers) > 0 {
		clientCN = peers[0].Subject.CommonName
	}
	return serverCN, clientCN, nil
}

func clientFor(t *testing.T, ca string, pair *Pair) *tls.Config {
	t.Helper()
	cfg, err := Client(ca, pair)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ServerName = "127.0.0.1"
	return cfg
}

func TestServerAndClient(t *testing.T) {
	auth := testcerts.NewAuthority(t)
	files := auth.Write(t, t.TempDir(), "head", "127.0.0.1")
	pair, err := LoadPair(files.Cert, files.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	server, err := Server(pair, "")
	if err != nil {
		t.Fatal(err)
	}
	cn, _, err := handshake(t, server, clientFor(t, files.CA, nil))
	if err != nil || cn != "head" {
		t.Fatalf("handshake = %q, %v; want the head's certificate", cn, err)
	}
	// A client trusting another authority refuses the server.
	other := testcerts.NewAuthority(t).Write(t, t.TempDir(), "other", "127.0.0.1")
	if _, _, err := handshake(t, server, clientFor(t, other.CA, nil)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client of another authority connected: %v", err)
	}
}

func TestMutualTLS(t *testing.T) {
	auth := testcerts.NewAuthority(t)
	dir := t.TempDir()
	serverFiles := auth.Write(t, dir, "node", "127.0.0.1")
	clientFiles := auth.Write(t, dir, "trainer")
	serverPair, err := LoadPair(serverFiles.Cert, serverFiles.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	server, err := Server(serverPair, serverFiles.CA)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := handshake(t, server, clientFor(t, serverFiles.CA, nil)); err == nil {
		t.Fatal("a client without a certificate connected to a server that requires one")
	}
	clientPair, err := LoadPair(clientFiles.Cert, clientFiles.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, cn, err := handshake(t, server, clientFor(t, serverFiles.CA, clientPair))
	if err != nil || cn != "trainer" {
		t.Fatalf("mutual handshake = client %q, %v", cn, err)
	}
	// A client certificate of another authority is refused.
	strangerFiles := testcerts.NewAuthority(t).Write(t, t.TempDir(), "stranger")
	stranger, err := LoadPair(strangerFiles.Cert, strangerFiles.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := handshake(t, server, clientFor(t, serverFiles.CA, stranger)); err == nil {
		t.Fatal("a client certificate of another authority was accepted")
	}
}

// rewrite replaces a pair's files with a new certificate named cn and moves their modification
// time forward, so the change is seen whatever the file system's time resolution.
func rewrite(t *testing.T, auth *testcerts.Authority, files testcerts.Files, cn string, at time.Time) {
	t.Helper()
	certPEM, keyPEM := auth.Issue(t, cn, "127.0.0.1")
	for path, data := range map[string][]byte{files.Cert: certPEM, files.Key: keyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPairReloadsWhenItsFilesChange(t *testing.T) {
	auth := testcerts.NewAuthority(t)
	files := auth.Write(t, t.TempDir(), "first", "127.0.0.1")
	var reloads []error
	pair, err := LoadPair(files.Cert, files.Key, func(err error) { reloads = append(reloads, err) })
	if err != nil {
		t.Fatal(err)
	}
	server, err := Server(pair, "")
	if err != nil {
		t.Fatal(err)
	}
	client := clientFor(t, files.CA, nil)
	if cn, _, err := handshake(t, server, client); err != nil || cn != "first" {
		t.Fatalf("before renewal: %q, %v", cn, err)
	}
	rewrite(t, auth, files, "renewed", time.Now().Add(time.Hour))
	if cn, _, err := handshake(t, server, client); err != nil || cn != "renewed" {
		t.Fatalf("after renewal: %q, %v; want the renewed certificate without a restart", cn, err)
	}
	if len(reloads) != 1 || reloads[0] != nil {
		t.Fatalf("reloads reported: %v", reloads)
	}

	// A certificate whose key does not match (a renewal caught half written) leaves the
	// renewed pair in service, and is reported once.
	certPEM, _ := auth.Issue(t, "half", "127.0.0.1")
	later := time.Now().Add(2 * time.Hour)
	if err := os.WriteFile(files.Cert, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(files.Cert, later, later); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if cn, _, err := handshake(t, server, client); err != nil || cn != "renewed" {
			t.Fatalf("with a mismatched key: %q, %v; want the previous certificate", cn, err)
		}
	}
	if len(reloads) != 2 || reloads[1] == nil || !strings.Contains(reloads[1].Error(), files.Cert) {
		t.Fatalf("reloads reported: %v; want one failure naming the file", reloads)
	}
	// The key arrives: the new pair serves.
	rewrite(t, auth, files, "complete", time.Now().Add(3*time.Hour))
	if cn, _, err := handshake(t, server, client); err != nil || cn != "complete" {
		t.Fatalf("after the key arrived: %q, %v", cn, err)
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	files := testcerts.NewAuthority(t).Write(t, dir, "x", "127.0.0.1")
	missing := filepath.Join(dir, "missing.crt")
	if _, err := LoadPair(missing, files.Key, nil); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing certificate: %v", err)
	}
	if _, err := LoadPair(files.Key, files.Key, nil); err == nil || !strings.Contains(err.Error(), files.Key) {
		t.Errorf("a key given as the certificate: %v", err)
	}
	if _, err := Server(mustPair(t, files), files.Key); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a key given as the client CA: %v", err)
	}
	if _, err := Client(missing, nil); err == nil || !strings.Contains(err.Error(), "--tls-ca") {
		t.Errorf("missing CA bundle: %v", err)
	}
}

func mustPair(t *testing.T, f testcerts.Files) *Pair {
	t.Helper()
	p, err := LoadPair(f.Cert, f.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
