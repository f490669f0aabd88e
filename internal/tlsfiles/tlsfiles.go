// Package tlsfiles builds TLS configurations from PEM files: a server
// configuration whose certificate and client CA can be reloaded while it
// serves, and client configurations for taskctl, the node-to-node probe and
// the etcd client.
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
)

// ServerFiles names the files of a TLS server.
type ServerFiles struct {
	// Cert and Key are the PEM certificate chain and private key.
	Cert, Key string
	// ClientCA, when set, is a PEM bundle of CAs: clients must present a
	// certificate signed by one of them.
	ClientCA string
}

// Reloader serves the current certificate and client CA of its files. Each
// handshake reads the state swapped in last, so a reload takes effect on
// the next connection without a restart; connections already open keep
// the certificate they were made with.
type Reloader struct {
	files ServerFiles
	cur   atomic.Pointer[serverState]
}

// serverState is one loaded generation of the files.
type serverState struct {
	cert      *tls.Certificate
	clientCAs *x509.CertPool
	stamps    []fileStamp
}

// fileStamp is what a change check compares: modification time and size.
type fileStamp struct {
	mod  time.Time
	size int64
}

// NewReloader loads the files once; it fails if they do not load.
func NewReloader(files ServerFiles) (*Reloader, error) {
	if files.Cert == "" || files.Key == "" {
		return nil, errors.New("TLS needs both a certificate and a key file")
	}
	r := &Reloader{files: files}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload reads the files again and swaps them in. If they do not load (a
// half-written pair, a key that does not match), the previous state stays
// in use and the error says why.
func (r *Reloader) Reload() error {
	stamps := r.stamps()
	cert, err := tls.LoadX509KeyPair(r.files.Cert, r.files.Key)
	if err != nil {
		return fmt.Errorf("load TLS certificate %s and key %s: %w", r.files.Cert, r.files.Key, err)
	}
	st := &serverState{cert: &cert, stamps: stamps}
	if r.files.ClientCA != "" {
		if st.clientCAs, err = LoadPool(r.files.ClientCA); err != nil {
			return err
		}
	}
	r.cur.Store(st)
	return nil
}

// ReloadIfChanged reloads when a file's modification time or size differs
// from the last load, and reports whether it reloaded.
func (r *Reloader) ReloadIfChanged() (bool, error) {
	now := r.stamps()
	old := r.cur.Load().stamps
	same := len(now) == len(old)
	for i := 0; same && i < len(now); i++ {
		same = now[i].mod.Equal(old[i].mod) && now[i].size == old[i].size
	}
	if same {
		return false, nil
	}
	if err := r.Reload(); err != nil {
		return false, err
	}
	return true, nil
}

// Certificate is the leaf certificate served now.
func (r *Reloader) Certificate() *x509.Certificate {
	c := r.cur.Load().cert
	if c.Leaf != nil {
		return c.Leaf
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return nil
	}
	return leaf
}

// stamps reads the stamps of the files in a fixed order; a file that
// cannot be read gets a zero stamp, which differs from any real one.
func (r *Reloader) stamps() []fileStamp {
	var out []fileStamp
	for _, f := range []string{r.files.Cert, r.files.Key, r.files.ClientCA} {
		if f == "" {
			continue
		}
		var s fileStamp
		if fi, err := os.Stat(f); err == nil {
			s = fileStamp{mod: fi.ModTime(), size: fi.Size()}
		}
		out = append(out, s)
	}
	return out
}

// ServerConfig returns a server configuration that takes the certificate
// and client CA of every handshake from the current state; with a client
// CA it requires and verifies a client certificate. nextProtos are the ALPN
// protocols offered ("h2" for gRPC, which its clients insist on).
func (r *Reloader) ServerConfig(nextProtos ...string) *tls.Config {
	base := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: nextProtos}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		st := r.cur.Load()
		c := &tls.Config{
			MinVersion:   tls.VersionTLS12,
			NextProtos:   nextProtos,
			Certificates: []tls.Certificate{*st.cert},
		}
		if st.clientCAs != nil {
			c.ClientCAs = st.clientCAs
			c.ClientAuth = tls.RequireAndVerifyClientCert
		}
		return c, nil
	}
	return base
}

// ClientFiles names the files of a TLS client. All are optional: without
// CA the system roots verify the server; without Cert and Key no client
// certificate is presented.
type ClientFiles struct {
	CA, Cert, Key string
}

// Set reports whether any file is named.
func (f ClientFiles) Set() bool { return f.CA != "" || f.Cert != "" || f.Key != "" }

// ClientConfig loads a client configuration from the files. The client
// certificate is read at each handshake that asks for one, so a client
// that lives long (a node's probe) sees a replaced pair.
func ClientConfig(f ClientFiles) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		pool, err := LoadPool(f.CA)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	if (f.Cert == "") != (f.Key == "") {
		return nil, errors.New("a client certificate needs both the certificate and the key file")
	}
	if f.Cert != "" {
		// Load once now so that a wrong file fails at start-up.
		if _, err := tls.LoadX509KeyPair(f.Cert, f.Key); err != nil {
			return nil, fmt.Errorf("load TLS client certificate %s and key %s: %w", f.Cert, f.Key, err)
		}
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
			if err != nil {
				return nil, fmt.Errorf("load TLS client certificate %s and key %s: %w", f.Cert, f.Key, err)
			}
			return &cert, nil
		}
	}
	return c, nil
}

// LoadPool reads a PEM bundle of CA certificates.
func LoadPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s holds no PEM certificate", file)
	}
	return pool, nil
}
