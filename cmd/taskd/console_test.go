package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/taskd/taskd/internal/devcerts"
)

// TestConsoleOverTLSWithTokens: the web console of a taskd with TLS and
// --tokens-file reaches the node's own API over TLS (as a client with the
// node's certificate) and forwards the viewer's token, so the API decides:
// 401 without a token, 403 for a token without the verb, the page for one
// with it. The root of the HTTP endpoint leads to the console.
func TestConsoleOverTLSWithTokens(t *testing.T) {
	p := newPKI(t, "taskd console CA")
	certFile, keyFile := p.write(p.issue("node-1", devcerts.LeafOptions{}), "node")
	file := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, file,
		tokenLine("viewer", "viewer-secret", "read", ""),
		tokenLine("scheduler", "scheduler-secret", "schedule", ""))
	d := startTaskd(t, "--name", "console-1", "--tls-cert", certFile, "--tls-key", keyFile, "--tls-client-ca", p.caFile,
		"--tokens-file", file)
	hc := &http.Client{
		Timeout:       30 * time.Second,
		Transport:     &http.Transport{TLSClientConfig: clientTLS(p.ca, p.issue("browser", devcerts.LeafOptions{}))},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	get := func(path, token string) (int, string, http.Header) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "https://"+d.http+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b), resp.Header
	}

	if code, _, h := get("/", ""); code != http.StatusFound || h.Get("Location") != "/ui/" {
		t.Fatalf("GET /: HTTP %d to %q, want 302 to /ui/", code, h.Get("Location"))
	}
	for _, c := range []struct {
		token string
		code  int
		has   string
	}{
		{"", http.StatusUnauthorized, "Unauthenticated"},
		{"scheduler.scheduler-secret", http.StatusForbidden, "lacks the verb"},
		{"viewer.viewer-secret", http.StatusOK, `data-node="console-1"`},
	} {
		code, body, _ := get("/ui/", c.token)
		if code != c.code || !strings.Contains(body, c.has) {
			t.Errorf("GET /ui/ with token %q: HTTP %d, want %d holding %q; body:\n%s", c.token, code, c.code, c.has, body)
		}
	}
}
