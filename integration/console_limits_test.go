package integration

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/pkg/identity"
)

// This file sends bad input through the web console of a real taskd
// process, as a browser would (with the page's CSRF token): every form
// field and query parameter the console passes to the API is refused with
// 400 naming the field, and etcd is then read directly: nothing was
// written.

// consoleBadInput is one row: a request and the field its refusal names.
type consoleBadInput struct {
	name string
	// form, when set, is posted to /ui/action; else query is asked of path.
	form  url.Values
	path  string
	query url.Values
	field string
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func consoleBadInputs() []consoleBadInput {
	long := strings.Repeat("x", identity.MaxLen+1)
	act := func(name, field string, kv ...string) consoleBadInput {
		f := url.Values{"back": {"/ui/"}}
		for i := 0; i < len(kv); i += 2 {
			f.Set(kv[i], kv[i+1])
		}
		return consoleBadInput{name: name, form: f, field: field}
	}
	page := func(name, path, field string, kv ...string) consoleBadInput {
		q := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		return consoleBadInput{name: name, path: path, query: q, field: field}
	}
	const task = "01jbxkq3z8yxw3kq9y7a6m5n4p"
	return []consoleBadInput{
		act("an unknown action", "op", "op", "explode"),
		act("pause without an identity", "identity", "op", "pause-identity"),
		act("pause an identity of 257 bytes", "identity", "op", "pause-identity", "identity", long),
		act("pause an identity with NUL", "identity", "op", "pause-identity", "identity", "a\x00b"),
		act("pause an identity with a bidi override", "identity", "op", "pause-identity", "identity", "abc\u202edef"),
		act("run now a task id that is not one", "task_id", "op", "run-now", "identity", "alice", "task_id", "not-a-task-id"),
		act("cancel a task of an identity of 257 bytes", "identity", "op", "cancel", "identity", long, "task_id", task, "confirm", "yes"),
		act("move to a node name of 65 bytes", "to_node", "op", "move", "identity", "alice", "node", strings.Repeat("n", 65), "confirm", "yes"),
		act("drain a node name with a slash", "node", "op", "drain", "node", "a/b", "confirm", "yes"),
		page("tasks of an identity of 257 bytes", "/ui/tasks", "identity", "identity", long),
		page("tasks of a kind of 129 bytes", "/ui/tasks", "kind", "kind", strings.Repeat("k", 129)),
		page("tasks with a page token not base64", "/ui/tasks", "page_token", "page_token", "!!!"),
		page("tasks with a page token of 1 MB", "/ui/tasks", "page_token", "page_token", strings.Repeat("A", 1<<20)),
		page("tasks with a page size of 1001", "/ui/tasks", "page_size", "page_size", "1001"),
		page("identities search of 257 bytes", "/ui/identities", "identity", "identity", long),
		page("a task of an identity with NUL", "/ui/task", "identity", "identity", "a\x00b", "id", task),
		page("events of an identity of 257 bytes", "/ui/events/stream", "identity", "identity", long),
		page("events of a type that is not one", "/ui/events/stream", "type", "type", "EXPLODED"),
		page("events of a kind with a control character", "/ui/events/stream", "kind", "kind", "a\x07b"),
	}
}

// TestBadConsoleInputs: each row is refused with 400 naming its field, and
// no key of any kind a request writes is in etcd afterwards.
func TestBadConsoleInputs(t *testing.T) {
	c := newCluster(t, "/console-limits/")
	node := startNode(t, c.opts("n1"))
	base := "http://" + node.httpAddr
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// The cluster page sets the CSRF cookie and carries the token in its
	// forms, as a browser gets it.
	resp, err := hc.Get(base + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("GET /ui/: %d, no CSRF token in the page:\n%.2000s", resp.StatusCode, body)
	}
	csrf := string(m[1])

	rows := consoleBadInputs()
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			var resp *http.Response
			var err error
			if row.form != nil {
				row.form.Set("csrf", csrf)
				req, _ := http.NewRequest(http.MethodPost, base+"/ui/action", strings.NewReader(row.form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Origin", base)
				resp, err = hc.Do(req)
			} else {
				resp, err = hc.Get(base + row.path + "?" + row.query.Encode())
			}
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			// The page quotes the field as the API or the console named it.
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), row.field+":") {
				t.Fatalf("%d, body:\n%.1500s\nwant 400 naming %q", resp.StatusCode, body, row.field)
			}
			if len(body) > 64<<10 {
				t.Fatalf("the refusal is %d bytes: it quotes the bad input back", len(body))
			}
		})
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.etcd.URL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	if got := storedKeys(t, cli, c.prefix); len(got) != 0 {
		t.Fatalf("refused console requests wrote keys: %v", got)
	}
	if t.Failed() {
		return
	}
	t.Logf("%d bad console inputs refused, nothing written", len(rows))
}
