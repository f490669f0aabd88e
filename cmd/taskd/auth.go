package main

// Bearer tokens on the gRPC API: a tokens file (--tokens-file) lists the
// tokens the node accepts, each with the verbs it may use and the identities
// it may touch; the TokenService stores more in etcd; package tokens checks
// every call of the taskd services against both.
// docs/security.md describes the file and the rules.

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"

	"github.com/taskd/taskd/pkg/config"
	"github.com/taskd/taskd/pkg/tokens"
)

// authorizer is the node's token checking: the tokens file, reloaded on
// SIGHUP, and the tokens stored in etcd. It is nil when the API is open.
type authorizer struct {
	file string
	*tokens.Authorizer
}

// load reads the tokens file; on error the tokens already loaded stay.
func (a *authorizer) load() ([]string, error) {
	data, err := os.ReadFile(a.file)
	if err != nil {
		return nil, fmt.Errorf("--tokens-file: %w", err)
	}
	toks, err := tokens.ParseFile(string(data))
	if err != nil {
		return nil, fmt.Errorf("--tokens-file %s: %w", a.file, err)
	}
	a.SetFile(toks)
	ids := make([]string, 0, len(toks))
	for id := range toks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// exposed is one address at which the node serves task data or control.
type exposed struct {
	option, addr string
	what         string // what it serves there
	serves       bool   // it serves that at all
	otherwise    string // how else to start, besides tokens or --insecure
}

// exposedSurfaces lists the addresses that reveal or change task data: the
// API on --listen, and the console and pprof on --http. /metrics and
// /healthz show none, so an --http serving only them (--console=false, no
// --pprof) or --metrics-listen is not listed.
func exposedSurfaces(cfg config.Config) []exposed {
	var onHTTP []string
	if cfg.Console {
		onHTTP = append(onHTTP, "the console")
	}
	if cfg.Pprof {
		onHTTP = append(onHTTP, "pprof")
	}
	return []exposed{
		{option: "--listen", addr: cfg.Listen, what: "the API", serves: true},
		{option: "--http", addr: cfg.HTTP, what: strings.Join(onHTTP, " and "), serves: len(onHTTP) > 0,
			otherwise: ", or --console=false without --pprof to serve only /metrics and /healthz there"},
	}
}

// setupAuth applies the start-up policy: a node that serves the API, the
// console or pprof on a non-loopback address needs --tokens-file or an
// explicit --insecure. It returns nil when the API is open (no tokens
// file).
func setupAuth(cfg config.Config, log hclog.Logger) (*authorizer, error) {
	if err := checkEmbeddedEtcdExposure(cfg); err != nil {
		return nil, err
	}
	if cfg.TokensFile == "" {
		for _, e := range exposedSurfaces(cfg) {
			if e.serves && !cfg.Insecure && !isLoopback(e.addr) {
				return nil, fmt.Errorf("%s %s is not a loopback address: give --tokens-file to require bearer tokens, "+
					"or --insecure to serve %s open%s", e.option, e.addr, e.what, e.otherwise)
			}
		}
		return nil, nil
	}
	a := &authorizer{file: cfg.TokensFile, Authorizer: tokens.NewAuthorizer(nil, nil)}
	ids, err := a.load()
	if err != nil {
		return nil, err
	}
	log.Info("tokens loaded", "file", cfg.TokensFile, "ids", strings.Join(ids, ","))
	return a, nil
}

// checkEmbeddedEtcdExposure refuses an embedded etcd whose client URL
// (--etcd-listen) is not on a loopback address unless it requires client
// certificates (https with --tls-client-ca) or --insecure is given:
// whoever reaches etcd reads and writes every key under --prefix, so
// bearer tokens, which guard only the API, do not protect it.
func checkEmbeddedEtcdExposure(cfg config.Config) error {
	if len(cfg.Etcd) > 0 || cfg.Insecure {
		return nil // an external etcd is secured by its own settings
	}
	u, err := url.Parse(cfg.EtcdListen)
	if err != nil || isLoopback(u.Host) {
		return nil // the config validator has refused a malformed URL already
	}
	if u.Scheme == "https" && cfg.TLSClientCA != "" {
		return nil
	}
	return fmt.Errorf("--etcd-listen %s is not a loopback address: the embedded etcd serves every key to whoever reaches it, "+
		"so give it an https URL with --tls-client-ca (client certificates required), or --insecure to serve it open", cfg.EtcdListen)
}

// isLoopback reports whether listen's host is a loopback address or
// "localhost"; an empty host (all interfaces) is not.
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// watch reloads the tokens file on SIGHUP until stop is called. A file
// that does not load is logged and the previous tokens stay.
func (a *authorizer) watch(log hclog.Logger) (stop func()) {
	if a == nil {
		return func() {}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-hup:
				ids, err := a.load()
				if err != nil {
					log.Error("tokens reload on SIGHUP failed; the previous tokens stay", "error", err)
					continue
				}
				log.Info("tokens reloaded", "file", a.file, "ids", strings.Join(ids, ","))
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
		<-finished
	}
}

// serverOptions returns the interceptors that check tokens; none when the
// API is open.
func (a *authorizer) serverOptions() []grpc.ServerOption {
	if a == nil {
		return nil
	}
	return a.ServerOptions()
}

// follow makes the authorizer honour the tokens stored in etcd.
func (a *authorizer) follow(f *tokens.Follower) {
	if a != nil {
		a.Follow(f)
	}
}

// fileTokens returns the tokens of the file, for the TokenService.
func (a *authorizer) fileTokens() map[string]*tokens.Token {
	if a == nil {
		return nil
	}
	return a.FileTokens()
}
