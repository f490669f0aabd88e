package console

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// HostPolicy decides which Host a request to the console (or to another
// handler it guards, such as pprof) may carry. A DNS-rebinding page reaches
// the node under the attacker's own name (Host: evil.example:7421, with a
// matching Origin), so the console answers only to names it knows:
//
//   - an IP address of the node: a loopback address, the address the HTTP
//     listener is bound to, or, when it is bound to all interfaces, an
//     address of one of this machine's interfaces;
//   - "localhost";
//   - the names it is given (the host of --advertise, the host of --http
//     when that is a name, and each --console-host entry).
//
// None of these can be rebound by a page of another site: an address
// literal is where the browser connects, and the names are the operator's.
// The port is not checked, except for a name given with one: the port a
// browser dials is changed by port mappings, tunnels and proxies, and the
// rebinding attack is in the name.
type HostPolicy struct {
	ips      map[string]bool // the listener's address, canonical (net.IP.String)
	wildcard bool            // bound to all interfaces: their addresses count
	names    map[string]bool // lower-case names, any port
	exact    map[string]bool // lower-case host:port, that port only
	// interfaceAddrs lists this machine's addresses: net.InterfaceAddrs.
	interfaceAddrs func() ([]net.Addr, error)
}

// NewHostPolicy returns the policy of a console served by a listener bound
// to bound (nil: loopback only), that also answers to names, each NAME or
// NAME:PORT (an IP address may be given as a name too).
func NewHostPolicy(bound net.Addr, names ...string) *HostPolicy {
	p := &HostPolicy{ips: map[string]bool{}, names: map[string]bool{}, exact: map[string]bool{}, interfaceAddrs: net.InterfaceAddrs}
	if bound != nil {
		if host, _, err := net.SplitHostPort(bound.String()); err == nil {
			if ip := net.ParseIP(host); ip != nil {
				if ip.IsUnspecified() {
					p.wildcard = true
				} else {
					p.ips[ip.String()] = true
				}
			}
		}
	}
	for _, n := range names {
		host, port := splitHost(n)
		if host == "" {
			continue
		}
		if port != "" {
			p.exact[net.JoinHostPort(host, port)] = true
		} else {
			p.names[host] = true
		}
	}
	return p
}

// splitHost splits a Host header (or a name given to NewHostPolicy) into
// its lower-case host, without brackets or a trailing dot, and its port
// ("" when it has none).
func splitHost(hostport string) (host, port string) {
	host = hostport
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	return host, port
}

// Allows reports whether a request with Host hostport is for this console.
func (p *HostPolicy) Allows(hostport string) bool {
	host, port := splitHost(hostport)
	switch {
	case host == "":
		return false
	case p.named(host, port), host == "localhost":
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() || p.ips[ip.String()] {
		return true
	}
	return p.wildcard && p.onInterface(ip)
}

// named reports whether host (with port) is one of the names given.
func (p *HostPolicy) named(host, port string) bool {
	return p.names[host] || port != "" && p.exact[net.JoinHostPort(host, port)]
}

// onInterface reports whether ip is an address of one of this machine's
// interfaces, read now (addresses come and go).
func (p *HostPolicy) onInterface(ip net.IP) bool {
	addrs, err := p.interfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// Guard serves next only for a request whose Host the policy allows; any
// other gets 421 Misdirected Request, before next sees it.
func (p *HostPolicy) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.Allows(r.Host) {
			misdirected(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// misdirected refuses a request whose Host is not the node's, in plain
// text: no page (and no cookie) is served under a name that is not ours.
func misdirected(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "Host "+printableHost(r.Host)+" is not an address of this taskd node: the console and pprof answer only to the node's "+
		"addresses, localhost and the names of --advertise and --console-host (a page of another site that rebinds its name to "+
		"this node is refused so); add the name to --console-host if it is yours", http.StatusMisdirectedRequest)
}

// printableHost quotes a Host header for a message, cut short.
func printableHost(h string) string {
	if len(h) > 100 {
		h = h[:100] + "..."
	}
	return strings.ToValidUTF8(`"`+strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, h)+`"`, "?")
}

// originAllowed reports whether a post's Origin (scheme://host[:port]) is
// this console's page: the same host and port as the request, whose Host
// the policy has already allowed, or a name given to the policy (a reverse
// proxy's public name, when the proxy rewrites Host).
func (p *HostPolicy) originAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
		return false
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	oh, op := splitHost(u.Host)
	return p.named(oh, op)
}
