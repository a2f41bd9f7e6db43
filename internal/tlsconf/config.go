package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// Server returns the configuration of a TLS server presenting pair. With clientCA (a PEM bundle
// file) every client must present a certificate that bundle verifies (mutual TLS); without it
// clients are not asked for one. TLS 1.2 is the oldest version accepted.
func Server(pair *Pair, clientCA string) (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return pair.Certificate()
		},
		// gRPC speaks HTTP/2 only; grpc-go sets it too, other stacks may not.
		NextProtos: []string{"h2"},
	}
	if clientCA != "" {
		pool, err := LoadPool(clientCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// Client returns the configuration of a TLS client that trusts the certificates the PEM bundle
// ca verifies (the system's roots when ca is empty) and, when pair is not nil, presents pair to
// servers that ask for a client certificate. The server's name is checked against the address
// dialed (gRPC sets it from the target).
func Client(ca string, pair *Pair) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pool, err := LoadPool(ca)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		cfg.RootCAs = pool
	}
	if pair != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return pair.Certificate()
		}
	}
	return cfg, nil
}

// LoadPool reads a PEM bundle of CA certificates.
func LoadPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}
