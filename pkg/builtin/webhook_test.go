package builtin

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/taskservice"
)

// runWebhook posts run through a webhook handler and returns its message and
// error.
func runWebhook(ctx context.Context, h taskservice.Handler, run *taskservice.Run) (string, error) {
	return h.(*webhookHandler).post(ctx, run)
}

func TestWebhookRequest(t *testing.T) {
	t.Parallel()
	type request struct {
		method string
		header http.Header
		body   string
	}
	got := make(chan request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- request{r.Method, r.Header.Clone(), string(body)}
		_, _ = io.WriteString(w, "accepted\n")
	}))
	defer srv.Close()

	msg, err := runWebhook(context.Background(), NewWebhook(srv.URL+"/hook", WebhookOptions{Client: srv.Client()}), testRun("the\x00payload"))
	if err != nil {
		t.Fatalf("err = %v, want nil", err)
	}
	if msg != "accepted" {
		t.Errorf("message = %q, want %q", msg, "accepted")
	}
	req := <-got
	if req.method != http.MethodPost || req.body != "the\x00payload" {
		t.Errorf("got %s with body %q, want POST with the payload", req.method, req.body)
	}
	for name, want := range map[string]string{
		"Content-Type":      "application/octet-stream",
		"X-Taskd-Identity":  "user-42",
		"X-Taskd-Task-Id":   "task-7",
		"X-Taskd-Kind":      "mail",
		"X-Taskd-Run":       "12",
		"X-Taskd-Fence":     "5.9001",
		"X-Taskd-Node":      "node-a",
		"X-Taskd-Attempt":   "3",
		"X-Taskd-Fire-Time": "2026-03-29T01:30:00.123456789Z",
	} {
		if v := req.header.Get(name); v != want {
			t.Errorf("header %s = %q, want %q", name, v, want)
		}
	}
}

func TestWebhookStatuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status    int
		body      string
		retryable bool
		wantErr   bool
		wantMsg   string
	}{
		{status: 200, body: "done", wantMsg: "done"},
		{status: 204},
		{status: 429, body: "slow down", wantErr: true, retryable: true},
		{status: 503, wantErr: true, retryable: true},
		{status: 500, body: "boom\n", wantErr: true, retryable: true},
		{status: 400, body: "bad payload", wantErr: true},
		{status: 404, wantErr: true},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, tc := range tests {
			if r.URL.Query().Get("status") == http.StatusText(tc.status) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
				return
			}
		}
		t.Errorf("unexpected request %s", r.URL)
	}))
	defer srv.Close()

	for _, tc := range tests {
		url := srv.URL + "/?status=" + strings.ReplaceAll(http.StatusText(tc.status), " ", "+")
		msg, err := runWebhook(context.Background(), NewWebhook(url, WebhookOptions{Client: srv.Client()}), testRun(""))
		if !tc.wantErr {
			if err != nil || msg != tc.wantMsg {
				t.Errorf("status %d: got (%q, %v), want (%q, nil)", tc.status, msg, err, tc.wantMsg)
			}
			continue
		}
		if err == nil {
			t.Errorf("status %d: err = nil, want an error", tc.status)
			continue
		}
		if got := taskservice.IsRetryable(err); got != tc.retryable {
			t.Errorf("status %d: IsRetryable(%q) = %v, want %v", tc.status, err, got, tc.retryable)
		}
		for _, s := range []string{srv.URL, http.StatusText(tc.status), strings.TrimSpace(tc.body)} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("status %d: err = %q, want it to name %q", tc.status, err, s)
			}
		}
	}
}

func TestWebhookBodyCapped(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 1<<20))
	}))
	defer srv.Close()
	msg, err := runWebhook(context.Background(), NewWebhook(srv.URL, WebhookOptions{Client: srv.Client()}), testRun(""))
	if err != nil {
		t.Fatalf("err = %v, want nil", err)
	}
	if len(msg) != maxMessage {
		t.Errorf("message is %d bytes, want %d", len(msg), maxMessage)
	}
}

func TestWebhookConnectionRefusedIsRetryable(t *testing.T) {
	t.Parallel()
	// A port that was just free: nothing listens there now.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/hook"
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = runWebhook(context.Background(), NewWebhook(url, WebhookOptions{}), testRun(""))
	if err == nil || !taskservice.IsRetryable(err) || !strings.Contains(err.Error(), url) {
		t.Errorf("err = %v, want a retryable error naming %s", err, url)
	}
}

func TestWebhookTimeoutIsRetryable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // the client gives up first
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := runWebhook(ctx, NewWebhook(srv.URL, WebhookOptions{Client: srv.Client()}), testRun(""))
	if !errors.Is(err, context.DeadlineExceeded) || !taskservice.IsRetryable(err) ||
		!strings.Contains(err.Error(), "run timed out") {
		t.Errorf("err = %v, want a retryable error wrapping context.DeadlineExceeded that says the run timed out", err)
	}
}

func TestWebhookPermanentWithoutRequest(t *testing.T) {
	t.Parallel()
	run := testRun("")
	run.Identity = "evil\r\nX-Injected: 1"
	_, err := runWebhook(context.Background(), NewWebhook("http://127.0.0.1:1/", WebhookOptions{}), run)
	if err == nil || taskservice.IsRetryable(err) || !strings.Contains(err.Error(), "X-Taskd-Identity") {
		t.Errorf("control character in identity: err = %v, want a permanent error naming X-Taskd-Identity", err)
	}

	err = NewWebhook("ftp://example.com/x", WebhookOptions{}).Work(context.Background(), testRun(""))
	if err == nil || taskservice.IsRetryable(err) || !strings.Contains(err.Error(), "scheme") {
		t.Errorf("ftp URL: err = %v, want a permanent error about the scheme", err)
	}
}

func TestWebhookWorkSetsMessage(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	if err := NewWebhook(srv.URL, WebhookOptions{Client: srv.Client()}).Work(context.Background(), testRun("")); err != nil {
		t.Fatalf("Work: %v", err)
	}
}

func TestValidateWebhookURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url     string
		wantErr string // substring; "" = valid
	}{
		{"http://example.com/hook", ""},
		{"https://127.0.0.1:8443/a?b=c", ""},
		{"HTTPS://example.com", ""},
		{"http://[::1]:80/", ""},
		{"ftp://example.com/", "scheme must be http or https"},
		{"/relative/path", "scheme must be http or https"},
		{"example.com/hook", "scheme must be http or https"},
		{"http:///nohost", "no host"},
		{"http://:8080/", "no host"},
		{"http:opaque", "no host"},
		{"http://exa mple.com/", "invalid webhook URL"},
		{"https://user:secret@/x", "no host"},
	}
	for _, tc := range tests {
		err := ValidateWebhookURL(tc.url)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("ValidateWebhookURL(%q) = %v, want nil", tc.url, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("ValidateWebhookURL(%q) = %v, want an error containing %q", tc.url, err, tc.wantErr)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("ValidateWebhookURL(%q) = %v, shows the password", tc.url, err)
		}
	}
}

func TestParseKindSpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec, kind, target string
		wantErr            string // substring; "" = valid
	}{
		{spec: "mail=/usr/bin/send-mail --fast", kind: "mail", target: "/usr/bin/send-mail --fast"},
		{spec: "hook=https://example.com/x?a=b&c=d", kind: "hook", target: "https://example.com/x?a=b&c=d"},
		{spec: "k=echo a=b", kind: "k", target: "echo a=b"},
		{spec: "caf\u00e9=true", kind: "caf\u00e9", target: "true"},
		{spec: strings.Repeat("k", 128) + "=true", kind: strings.Repeat("k", 128), target: "true"},
		{spec: "mail", wantErr: "no '='"},
		{spec: "", wantErr: "no '='"},
		{spec: "=true", wantErr: "empty kind"},
		{spec: "mail=", wantErr: "empty command or URL"},
		{spec: "mail=  ", wantErr: "empty command or URL"},
		{spec: strings.Repeat("k", 129) + "=true", wantErr: "129 bytes, at most 128"},
		{spec: "my kind=true", wantErr: "whitespace or a control character (U+0020) at byte 2"},
		{spec: "a\tb=true", wantErr: "U+0009"},
		{spec: "a\x01=true", wantErr: "U+0001"},
		{spec: "a\u00a0=true", wantErr: "U+00A0"},
		{spec: "a\xff=true", wantErr: "not valid UTF-8 at byte 1"},
	}
	for _, tc := range tests {
		kind, target, err := ParseKindSpec(tc.spec)
		if tc.wantErr == "" {
			if err != nil || kind != tc.kind || target != tc.target {
				t.Errorf("ParseKindSpec(%q) = (%q, %q, %v), want (%q, %q, nil)", tc.spec, kind, target, err, tc.kind, tc.target)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseKindSpec(%q) = (%q, %q, %v), want an error containing %q", tc.spec, kind, target, err, tc.wantErr)
		}
	}
}
