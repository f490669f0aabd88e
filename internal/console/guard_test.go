package console

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// rawPost posts form to the console as a browser of another page might:
// with exactly the cookies and headers given.
func (tn *testNode) rawPost(t *testing.T, path string, form url.Values, cookies []*http.Cookie, header map[string]string) page {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, tn.web.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, ck := range cookies {
		req.AddCookie(ck)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	return do(t, httpClient(nil), req)
}

// An action or a token form posted without this browser's CSRF token is
// refused (403) before any API call, whatever else it carries; the
// console's own forms carry the token.
func TestCSRF(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	n := startNode(t, cli, "n1", true)
	task := n.schedule(t, "alice", time.Hour, nil)
	pause := url.Values{"op": {"pause-task"}, "identity": {"alice"}, "task_id": {task.GetId()}}
	auth := map[string]string{"Authorization": "Bearer " + adminToken}
	ck := n.csrfCookieOf(t)
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != Prefix {
		t.Fatalf("CSRF cookie %+v: want HttpOnly, SameSite=Strict, Path=%s", ck, Prefix)
	}
	other, err := newCSRFKeys()
	if err != nil {
		t.Fatal(err)
	}
	with := func(tok string) url.Values {
		v := url.Values{csrfField: {tok}}
		for k, x := range pause {
			v[k] = x
		}
		return v
	}
	forged := &http.Cookie{Name: csrfCookie, Value: "chosen-by-the-attacker"}
	alien := &http.Cookie{Name: csrfCookie, Value: other.issue()}
	for _, c := range []struct {
		what    string
		form    url.Values
		cookies []*http.Cookie
		has     string
	}{
		{"no token, no cookie", pause, nil, "no CSRF token"},
		{"a cookie, no field", pause, []*http.Cookie{ck}, "does not carry"},
		{"a field, no cookie", with(ck.Value), nil, "no CSRF token"},
		{"a field unlike the cookie", with(n.csrfCookieOf(t).Value), []*http.Cookie{ck}, "does not carry"},
		{"a cookie the console did not issue, matched", with(forged.Value), []*http.Cookie{forged}, "no CSRF token"},
		{"another console's token, matched", with(alien.Value), []*http.Cookie{alien}, "no CSRF token"},
	} {
		n.rawPost(t, "/ui/action", c.form, c.cookies, auth).want(t, c.what, http.StatusForbidden, c.has)
		if n.task(t, "alice", task.GetId()).GetPaused() {
			t.Fatalf("%s: the refused pause paused the task", c.what)
		}
	}
	// The token form too: another site cannot log the viewer in as itself.
	n.rawPost(t, "/ui/token", url.Values{"token": {aliceToken}}, []*http.Cookie{ck}, nil).want(t, "token form without the field", 403, "does not carry")

	n.rawPost(t, "/ui/action", with(ck.Value), []*http.Cookie{ck}, auth).want(t, "the console's own form", http.StatusSeeOther)
	if !n.task(t, "alice", task.GetId()).GetPaused() {
		t.Fatal("the pause with the CSRF token did not pause the task")
	}
	// Every form of the pages holds the field.
	for _, path := range []string{"/ui/", "/ui/identities?identity=alice", "/ui/task?identity=alice&id=" + task.GetId(), "/ui/token"} {
		p := n.get(t, adminToken, path)
		if forms, fields := strings.Count(p.body, `method="post"`), strings.Count(p.body, `name="csrf" value="`); forms == 0 || forms != fields {
			t.Errorf("%s: %d post forms, %d csrf fields", path, forms, fields)
		}
	}
}

// A request whose Host is not the node's is refused (421) before any API
// call: a DNS-rebinding page's, with a matching Origin and a valid CSRF
// token. A post from another origin of an allowed host is refused by its
// Origin and by Sec-Fetch-Site.
func TestHostCheck(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	n := startNode(t, cli, "n1", true)
	task := n.schedule(t, "alice", time.Hour, nil)
	_, port, _ := net.SplitHostPort(n.web.Listener.Addr().String())
	ck := n.csrfCookieOf(t)
	pause := url.Values{"op": {"pause-task"}, "identity": {"alice"}, "task_id": {task.GetId()}, csrfField: {ck.Value}}
	for _, c := range []struct {
		what   string
		header map[string]string
		status int
		has    string
	}{
		{"rebinding", map[string]string{"Host": "evil.example:" + port, "Origin": "http://evil.example:" + port}, 421, "not an address of this taskd node"},
		{"rebinding, no port", map[string]string{"Host": "evil.example", "Origin": "http://evil.example"}, 421, "--console-host"},
		{"another port's page", map[string]string{"Origin": "http://127.0.0.1:1"}, 403, "Origin"},
		{"a same-site page", map[string]string{"Sec-Fetch-Site": "same-site"}, 403, "Sec-Fetch-Site"},
		{"a cross-site page", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "Sec-Fetch-Site"},
	} {
		c.header["Authorization"] = "Bearer " + adminToken
		n.rawPost(t, "/ui/action", pause, []*http.Cookie{ck}, c.header).want(t, c.what, c.status, c.has)
		if n.task(t, "alice", task.GetId()).GetPaused() {
			t.Fatalf("%s: the refused pause paused the task", c.what)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, n.web.URL+"/ui/tasks", nil)
	req.Host = "evil.example:" + port
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if p := do(t, httpClient(nil), req); p.status != 421 || strings.Contains(p.body, task.GetId()) || p.header.Get("Set-Cookie") != "" {
		t.Fatalf("rebinding read: HTTP %d, Set-Cookie %q, body:\n%s", p.status, p.header.Get("Set-Cookie"), p.body)
	}
	n.rawPost(t, "/ui/action", pause, []*http.Cookie{ck}, map[string]string{
		"Authorization": "Bearer " + adminToken, "Host": "localhost:" + port, "Origin": "http://localhost:" + port, "Sec-Fetch-Site": "same-origin",
	}).want(t, "the console's own page", http.StatusSeeOther)
	if !n.task(t, "alice", task.GetId()).GetPaused() {
		t.Fatal("the allowed pause did not pause the task")
	}
}

// The policy's table: the listener's addresses, loopback and localhost
// with any port, names as given, and nothing else.
func TestHostPolicy(t *testing.T) {
	ifaces := func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("10.1.2.3"), Mask: net.CIDRMask(24, 32)}}, nil
	}
	specific := NewHostPolicy(&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 7421}, "taskd-1", "Proxy.Example.com:8443", "fd00::9")
	specific.interfaceAddrs = ifaces
	wild := NewHostPolicy(&net.TCPAddr{IP: net.IPv4zero, Port: 7421})
	wild.interfaceAddrs = ifaces
	broken := NewHostPolicy(&net.TCPAddr{IP: net.IPv4zero, Port: 7421})
	broken.interfaceAddrs = func() ([]net.Addr, error) { return nil, errors.New("no interfaces") }
	for _, c := range []struct {
		p    *HostPolicy
		host string
		want bool
	}{
		{specific, "192.0.2.7:7421", true},
		{specific, "192.0.2.7", true},
		{specific, "127.0.0.1:7421", true},
		{specific, "127.0.0.1:9999", true}, // a port mapping or tunnel
		{specific, "[::1]:7421", true},
		{specific, "localhost:7421", true},
		{specific, "LOCALHOST.", true},
		{specific, "taskd-1:7421", true},
		{specific, "TASKD-1", true},
		{specific, "proxy.example.com:8443", true},
		{specific, "proxy.example.com", false}, // given with a port: that port only
		{specific, "proxy.example.com:443", false},
		{specific, "[fd00::9]:7421", true},
		{specific, "10.1.2.3:7421", false}, // an interface address, but the listener is bound to one address
		{specific, "evil.example:7421", false},
		{specific, "evil.example", false},
		{specific, "taskd-1.evil.example", false},
		{specific, "localhost.evil.example", false},
		{specific, "127.0.0.1.evil.example", false},
		{specific, "", false},
		{wild, "10.1.2.3:7421", true},
		{wild, "10.1.2.4:7421", false},
		{wild, "0.0.0.0:7421", false},
		{wild, "evil.example:7421", false},
		{broken, "10.1.2.3:7421", false},
		{broken, "127.0.0.1:7421", true},
		{NewHostPolicy(nil), "127.0.0.1:1", true},
		{NewHostPolicy(nil), "192.0.2.7:7421", false},
	} {
		if got := c.p.Allows(c.host); got != c.want {
			t.Errorf("Allows(%q) = %v, want %v", c.host, got, c.want)
		}
	}
	for _, c := range []struct {
		origin, host string
		want         bool
	}{
		{"http://127.0.0.1:7421", "127.0.0.1:7421", true},
		{"https://Taskd-1:7421", "taskd-1:7421", true},
		{"http://127.0.0.1:8080", "127.0.0.1:7421", false}, // another port's page
		{"https://proxy.example.com:8443", "127.0.0.1:7421", true},
		{"https://taskd-1", "127.0.0.1:7421", true},
		{"http://evil.example:7421", "127.0.0.1:7421", false},
		{"ftp://127.0.0.1:7421", "127.0.0.1:7421", false},
		{"null", "127.0.0.1:7421", false},
	} {
		if got := specific.originAllowed(c.origin, c.host); got != c.want {
			t.Errorf("originAllowed(%q, %q) = %v, want %v", c.origin, c.host, got, c.want)
		}
	}
}

// Every viewer's calls carry that viewer's token and no other, though all
// viewers share the console's one client of the API (the token goes with
// the request's context, client.ContextWithToken): viewers with an admin
// token, a token scoped to alice and none at all ask for the whole
// cluster's tasks at the same time, and each gets what its own token
// allows, never what another's would.
func TestViewersTokensStayTheirOwn(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	n := startNode(t, cli, "n1", true)
	bobs := n.schedule(t, "bob", time.Hour, nil)
	viewers := []struct {
		token  string
		status int
		has    string
	}{
		{adminToken, http.StatusOK, bobs.GetId()},
		{aliceToken, http.StatusForbidden, "PermissionDenied"},
		{"", http.StatusUnauthorized, "Unauthenticated"},
	}
	const rounds = 20
	errs := make(chan error, rounds*len(viewers))
	var wg sync.WaitGroup
	for round := range rounds {
		for _, v := range viewers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, err := http.NewRequest(http.MethodGet, n.web.URL+"/ui/tasks", nil)
				if err != nil {
					errs <- err
					return
				}
				if v.token != "" {
					req.Header.Set("Authorization", "Bearer "+v.token)
				}
				resp, err := httpClient(nil).Do(req)
				if err != nil {
					errs <- err
					return
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					errs <- err
					return
				}
				if resp.StatusCode != v.status || !strings.Contains(string(b), v.has) {
					errs <- fmt.Errorf("round %d, token %q: HTTP %d, want %d holding %q", round, tokenID(v.token), resp.StatusCode, v.status, v.has)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
