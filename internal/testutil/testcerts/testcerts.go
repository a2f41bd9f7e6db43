// Package testcerts makes certificates for tests, in process: a throwaway certificate authority
// and leaf certificates it signs, written as PEM files under the test's temporary directory. No
// key ever outlives the test that made it.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Authority is a certificate authority made for one test.
type Authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the authority's certificate, what clients trust.
	PEM []byte
}

// Files names the PEM files of a certificate written for a test.
type Files struct {
	// CA is the authority's certificate (the bundle peers trust).
	CA string
	// Cert and Key are the leaf certificate and its private key.
	Cert, Key string
}

// NewAuthority makes a certificate authority valid for a day.
func NewAuthority(tb testing.TB) *Authority {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(tb),
		Subject:               pkix.Name{CommonName: "cachedb test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return &Authority{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Issue signs a leaf certificate for names (IP addresses or DNS names) usable by servers and
// clients alike (mutual TLS), named commonName; it returns the certificate and key as PEM.
func (a *Authority) Issue(tb testing.TB, commonName string, names ...string) (certPEM, keyPEM []byte) {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb),
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// Write issues a certificate for names (Issue) and writes it, its key and the authority's
// certificate into dir as NAME.crt, NAME.key and ca.crt.
func (a *Authority) Write(tb testing.TB, dir, name string, names ...string) Files {
	tb.Helper()
	certPEM, keyPEM := a.Issue(tb, name, names...)
	f := Files{CA: filepath.Join(dir, "ca.crt"), Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key")}
	for path, data := range map[string][]byte{f.CA: a.PEM, f.Cert: certPEM, f.Key: keyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return f
}

// Loopback writes a certificate for the loopback addresses and localhost into a new temporary
// directory, signed by a new authority.
func Loopback(tb testing.TB) Files {
	tb.Helper()
	return NewAuthority(tb).Write(tb, tb.TempDir(), "server", "127.0.0.1", "::1", "localhost")
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func serial(tb testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
