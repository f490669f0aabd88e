// Command certgen writes a development PKI for a taskd cluster with Go's
// crypto (no openssl needed): a CA, one certificate per taskd node and per
// etcd member (each valid for serving and for dialling, since nodes dial
// each other and etcd members dial their peers), and a client certificate
// for taskctl. `make certs` runs it. Every run makes a new CA and replaces
// the files: the certificates are for development and tests, not for a
// production PKI.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/taskd/taskd/internal/devcerts"
)

func main() {
	out := flag.String("out", "deploy/certs", "`DIR` to write ca.crt, ca.key and NAME.crt/NAME.key into")
	nodes := flag.String("nodes", "taskd-1,taskd-2,taskd-3", "comma-separated taskd node host `NAMES`")
	members := flag.String("etcd", "etcd-1,etcd-2,etcd-3", "comma-separated etcd member host `NAMES`")
	hosts := flag.String("hosts", "localhost,127.0.0.1", "comma-separated extra `NAMES` and IPs every server certificate is valid for")
	flag.Parse()
	if err := write(*out, split(*nodes), split(*members), split(*hosts)); err != nil {
		fmt.Fprintf(os.Stderr, "certgen: %v\n", err)
		os.Exit(1)
	}
}

// write makes the CA and every certificate in dir.
func write(dir string, nodes, members, hosts []string) error {
	ca, err := devcerts.NewCA("taskd development CA")
	if err != nil {
		return err
	}
	if err := ca.WriteCA(dir, "ca"); err != nil {
		return err
	}
	var extraDNS []string
	var extraIPs []net.IP
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			extraIPs = append(extraIPs, ip)
		} else {
			extraDNS = append(extraDNS, h)
		}
	}
	issue := func(name string, server bool) error {
		o := devcerts.LeafOptions{Client: true, Server: server}
		if server {
			o.DNSNames = append([]string{name}, extraDNS...)
			o.IPs = extraIPs
		}
		pair, err := ca.Issue(name, o)
		if err != nil {
			return err
		}
		certFile, _, err := pair.Write(dir, name)
		if err != nil {
			return err
		}
		fmt.Printf("%s (serial %s)\n", certFile, pair.Cert.SerialNumber)
		return nil
	}
	for _, n := range append(append([]string{}, nodes...), members...) {
		if err := issue(n, true); err != nil {
			return err
		}
	}
	// taskctl's client certificate, and the one taskd nodes may use to
	// dial etcd if they should not present their node certificate.
	for _, n := range []string{"taskctl", "etcd-client"} {
		if err := issue(n, false); err != nil {
			return err
		}
	}
	fmt.Printf("%s: CA and certificates written\n", filepath.Clean(dir))
	return nil
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
