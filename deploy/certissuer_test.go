package deploy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// certIssuer stands in for cert-manager and the Issuer a Certificate names: one CA that signs
// each rendered Certificate into the Secret it names (tls.crt, tls.key, ca.crt), as cert-manager
// does with a CA issuer. The only difference from a cluster: every certificate also names
// 127.0.0.1, since the stand-in rewrites every address of a pod or Service to it (loopback_test.go).
type certIssuer struct {
	key   *ecdsa.PrivateKey
	cert  *x509.Certificate
	caPEM string
}

func newCertIssuer() (*certIssuer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cachedb stand-in issuer"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &certIssuer{key: key, cert: cert, caPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}, nil
}

// issue signs c's certificate and returns its Secret's data.
func (ci *certIssuer) issue(c *certificate, serial int64) (map[string]string, error) {
	if k := c.Spec.PrivateKey; k != nil && k.Algorithm != "" && k.Algorithm != "ECDSA" {
		return nil, fmt.Errorf("certificate %s: private key algorithm %s is not stood in for", c.Name, k.Algorithm)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	validFor := 90 * 24 * time.Hour
	if c.Spec.Duration != nil {
		validFor = c.Spec.Duration.Duration
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: c.Spec.CommonName},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(validFor),
		DNSNames: c.Spec.DNSNames, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	for _, ip := range c.Spec.IPAddresses {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	for _, u := range c.Spec.Usages {
		switch u {
		case "digital signature":
			tmpl.KeyUsage |= x509.KeyUsageDigitalSignature
		case "key encipherment":
			tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		case "server auth":
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		case "client auth":
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		default:
			return nil, fmt.Errorf("certificate %s: usage %q is not stood in for", c.Name, u)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ci.cert, &key.PublicKey, ci.key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return map[string]string{
		"tls.crt": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		"tls.key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})),
		"ca.crt":  ci.caPEM,
	}, nil
}
