package deploy

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// certificate is cert-manager's Certificate (cert-manager.io/v1) as far as the chart renders
// one. cert-manager's Go module is not a dependency of these tests (its API package pulls in
// much of cert-manager): this local type decodes strictly like the others (decodeStrict), so a
// field the chart renders that is not here, or is misspelt, fails the tests, and validate checks
// what cert-manager's API validation would (required fields, enumerations).
type certificate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              certificateSpec `json:"spec"`
}

type certificateSpec struct {
	SecretName     string                 `json:"secretName"`
	IssuerRef      certificateIssuerRef   `json:"issuerRef"`
	CommonName     string                 `json:"commonName,omitempty"`
	DNSNames       []string               `json:"dnsNames,omitempty"`
	IPAddresses    []string               `json:"ipAddresses,omitempty"`
	Duration       *metav1.Duration       `json:"duration,omitempty"`
	RenewBefore    *metav1.Duration       `json:"renewBefore,omitempty"`
	Usages         []string               `json:"usages,omitempty"`
	PrivateKey     *certificatePrivateKey `json:"privateKey,omitempty"`
	SecretTemplate *struct {
		Annotations map[string]string `json:"annotations,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
	} `json:"secretTemplate,omitempty"`
}

type certificateIssuerRef struct {
	Name  string `json:"name"`
	Kind  string `json:"kind,omitempty"`
	Group string `json:"group,omitempty"`
}

type certificatePrivateKey struct {
	Algorithm      string `json:"algorithm,omitempty"`
	Size           int    `json:"size,omitempty"`
	Encoding       string `json:"encoding,omitempty"`
	RotationPolicy string `json:"rotationPolicy,omitempty"`
}

// keyUsages are cert-manager v1's KeyUsage values.
var keyUsages = []string{"signing", "digital signature", "content commitment", "key encipherment", "key agreement",
	"data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth", "client auth",
	"code signing", "email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping",
	"ocsp signing", "microsoft sgc", "netscape sgc"}

// validate checks what cert-manager's API server validation would refuse.
func (c *certificate) validate() error {
	s := c.Spec
	switch {
	case s.SecretName == "":
		return fmt.Errorf("certificate %s: spec.secretName is required", c.Name)
	case s.IssuerRef.Name == "":
		return fmt.Errorf("certificate %s: spec.issuerRef.name is required", c.Name)
	case s.CommonName == "" && len(s.DNSNames) == 0 && len(s.IPAddresses) == 0:
		return fmt.Errorf("certificate %s: give at least one of commonName, dnsNames, ipAddresses", c.Name)
	case s.IssuerRef.Kind != "" && !slices.Contains([]string{"Issuer", "ClusterIssuer"}, s.IssuerRef.Kind) && s.IssuerRef.Group == "cert-manager.io":
		return fmt.Errorf("certificate %s: issuerRef.kind %q", c.Name, s.IssuerRef.Kind)
	case s.Duration != nil && s.RenewBefore != nil && s.RenewBefore.Duration >= s.Duration.Duration:
		return fmt.Errorf("certificate %s: renewBefore %s must be shorter than duration %s", c.Name, s.RenewBefore.Duration, s.Duration.Duration)
	case s.Duration != nil && s.Duration.Duration < 3600e9:
		return fmt.Errorf("certificate %s: duration %s is under cert-manager's minimum of 1h", c.Name, s.Duration.Duration)
	}
	for _, u := range s.Usages {
		if !slices.Contains(keyUsages, u) {
			return fmt.Errorf("certificate %s: usage %q is not a cert-manager key usage", c.Name, u)
		}
	}
	if k := s.PrivateKey; k != nil {
		sizes := map[string][]int{"RSA": {0, 2048, 3072, 4096, 8192}, "ECDSA": {0, 256, 384, 521}, "Ed25519": {0}, "": {0, 2048, 3072, 4096, 8192}}
		if ok := slices.Contains(sizes[k.Algorithm], k.Size); !ok {
			return fmt.Errorf("certificate %s: privateKey algorithm %q with size %d", c.Name, k.Algorithm, k.Size)
		}
		if !slices.Contains([]string{"", "Never", "Always"}, k.RotationPolicy) || !slices.Contains([]string{"", "PKCS1", "PKCS8"}, k.Encoding) {
			return fmt.Errorf("certificate %s: privateKey %+v", c.Name, *k)
		}
	}
	return nil
}
