// Package devcerts makes X.509 certificates with Go's crypto: a CA and the
// server and client certificates it signs. Tests use it for real TLS
// handshakes, and `make certs` for a development CA and node certificates.
// Keys are ECDSA P-256. Nothing here is meant for a production PKI.
package devcerts

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
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that signs leaf certificates.
type CA struct {
	// Cert is the CA's self-signed certificate.
	Cert *x509.Certificate
	// CertPEM is Cert in PEM, as a trust file holds it.
	CertPEM []byte
	key     *ecdsa.PrivateKey
}

// Pair is a signed certificate and its private key.
type Pair struct {
	// Cert is the parsed certificate.
	Cert *x509.Certificate
	// CertPEM is the certificate in PEM.
	CertPEM []byte
	// KeyPEM is the private key in PKCS #8 PEM.
	KeyPEM []byte
}

// LeafOptions says what a leaf certificate is for and when it is valid.
type LeafOptions struct {
	// DNSNames and IPs are the subject alternative names a client checks.
	DNSNames []string
	IPs      []net.IP
	// Server and Client set the extended key usages; a node certificate
	// used both to serve and to dial its peers has both.
	Server, Client bool
	// NotBefore and NotAfter bound the validity; zero means from an hour
	// ago to a year from now. An expired certificate has NotAfter in the
	// past.
	NotBefore, NotAfter time.Time
}

// NewCA makes a self-signed CA valid from an hour ago for ten years.
func NewCA(commonName string) (*CA, error) {
	now := time.Now()
	key, der, cert, err := certify(&x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"taskd development"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), key: key}, nil
}

// Issue signs a new leaf certificate for commonName with a fresh key and a
// random serial number.
func (ca *CA) Issue(commonName string, o LeafOptions) (*Pair, error) {
	now := time.Now()
	nb, na := o.NotBefore, o.NotAfter
	if nb.IsZero() {
		nb = now.Add(-time.Hour)
	}
	if na.IsZero() {
		na = now.AddDate(1, 0, 0)
	}
	var usage []x509.ExtKeyUsage
	if o.Server {
		usage = append(usage, x509.ExtKeyUsageServerAuth)
	}
	if o.Client {
		usage = append(usage, x509.ExtKeyUsageClientAuth)
	}
	key, der, cert, err := certify(&x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName, Organization: []string{"taskd development"}},
		NotBefore:   nb,
		NotAfter:    na,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: usage,
		DNSNames:    o.DNSNames,
		IPAddresses: o.IPs,
	}, ca)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Pair{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", keyDER)}, nil
}

// WriteCA writes the CA's certificate to dir/name.crt and its key to
// dir/name.key (mode 0600), so that more certificates can be signed later.
func (ca *CA) WriteCA(dir, name string) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return err
	}
	return writeFiles(dir, name, ca.CertPEM, pemBlock("PRIVATE KEY", keyDER))
}

// Write writes the certificate to dir/name.crt and the key to dir/name.key
// (mode 0600). It returns the two paths.
func (p *Pair) Write(dir, name string) (certFile, keyFile string, err error) {
	if err := writeFiles(dir, name, p.CertPEM, p.KeyPEM); err != nil {
		return "", "", err
	}
	return filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"), nil
}

func writeFiles(dir, name string, certPEM, keyPEM []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), certPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".key"), keyPEM, 0o600)
}

// newSerial is a random 127-bit serial number, positive as RFC 5280 wants.
// certify makes a fresh key and its certificate of tmpl, with a random
// serial number, signed by ca (self-signed when ca is nil).
func certify(tmpl *x509.Certificate, ca *CA) (*ecdsa.PrivateKey, []byte, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return nil, nil, nil, err
	}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.Cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return key, der, cert, nil
}

func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
