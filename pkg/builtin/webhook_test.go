package builtin

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
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

// webhookCall is one run of a webhook: its message and error, what the
// error asks for (and from when), and the times just before and after it.
type webhookCall struct {
	msg           string
	err           error
	asks          taskservice.Request
	at            time.Time
	before, after time.Time
}

// callWith runs a webhook of srv's URL with query q.
func callWith(srv *httptest.Server, q url.Values) webhookCall {
	c := webhookCall{before: time.Now()}
	c.msg, c.err = runWebhook(context.Background(), NewWebhook(srv.URL+"/?"+q.Encode(), WebhookOptions{Client: srv.Client()}), testRun(""))
	c.after = time.Now()
	c.asks, c.at = taskservice.Requested(c.err)
	return c
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

// TestWebhookStatuses: the HTTP status table of docs/workers.md. 2xx is a
// success, 429 and 5xx failed attempts that are retried, any other status
// a failure not retried.
func TestWebhookStatuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status  int
		body    string
		want    taskservice.Request
		wantMsg string
	}{
		{status: 200, body: "done", want: taskservice.RequestSuccess, wantMsg: "done"},
		{status: 202, body: "queued", want: taskservice.RequestSuccess, wantMsg: "queued"},
		{status: 204, want: taskservice.RequestSuccess},
		{status: 429, body: "slow down", want: taskservice.RequestRetry},
		{status: 503, want: taskservice.RequestRetry},
		{status: 500, body: "boom\n", want: taskservice.RequestRetry},
		{status: 502, want: taskservice.RequestRetry},
		{status: 504, want: taskservice.RequestRetry},
		{status: 400, body: "bad payload", want: taskservice.RequestPermanent},
		{status: 404, want: taskservice.RequestPermanent},
		{status: 409, want: taskservice.RequestPermanent},
		{status: 410, want: taskservice.RequestPermanent},
		{status: 304, want: taskservice.RequestPermanent}, // a final 3xx: the client follows no Location
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
		got, at := taskservice.Requested(err)
		if got != tc.want || !at.IsZero() || msg != tc.wantMsg {
			t.Errorf("status %d: (%q, %v) asks for %s at %v, want %s with message %q", tc.status, msg, err, got, at, tc.want, tc.wantMsg)
			continue
		}
		if err == nil {
			continue
		}
		for _, s := range []string{srv.URL, http.StatusText(tc.status), strings.TrimSpace(tc.body)} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("status %d: err = %q, want it to name %q", tc.status, err, s)
			}
		}
	}
}

// TestWebhookRetryAfter: on 429 and 503 a Retry-After (seconds or an HTTP
// date) is the earliest retry, at most 24 h ahead; a bad or past one, or
// one on another status, leaves the backoff alone.
func TestWebhookRetryAfter(t *testing.T) {
	t.Parallel()
	date := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	tests := []struct {
		name   string
		status int
		value  string
		after  time.Duration // the earliest retry after the request, about; 0: none
		at     time.Time     // or exactly this
	}{
		{name: "429 seconds", status: 429, value: "120", after: 2 * time.Minute},
		{name: "503 seconds", status: 503, value: " 30 ", after: 30 * time.Second},
		{name: "503 HTTP date", status: 503, value: date.Format(http.TimeFormat), at: date},
		{name: "429 too far: 24 h", status: 429, value: "999999999", after: taskservice.MaxHandlerDelay},
		{name: "429 date too far: 24 h", status: 429, value: date.Add(100 * 24 * time.Hour).Format(http.TimeFormat),
			after: taskservice.MaxHandlerDelay},
		{name: "429 zero", status: 429, value: "0"},
		{name: "429 negative", status: 429, value: "-5"},
		{name: "429 past date", status: 429, value: "Wed, 21 Oct 2015 07:28:00 GMT"},
		{name: "429 garbage", status: 429, value: "soon"},
		{name: "500 ignores it", status: 500, value: "120"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("status"))
		w.Header().Set("Retry-After", r.URL.Query().Get("after"))
		w.WriteHeader(code)
	}))
	defer srv.Close()
	for _, tc := range tests {
		q := url.Values{"status": {strconv.Itoa(tc.status)}, "after": {tc.value}}
		c := callWith(srv, q)
		switch {
		case c.asks != taskservice.RequestRetry:
			t.Errorf("%s: err = %v asks for %s, want a retry", tc.name, c.err, c.asks)
		case !tc.at.IsZero() && !c.at.Equal(tc.at):
			t.Errorf("%s: earliest retry %v, want %v", tc.name, c.at, tc.at)
		case tc.at.IsZero() && tc.after == 0 && !c.at.IsZero():
			t.Errorf("%s: earliest retry %v, want none (the backoff alone)", tc.name, c.at)
		case tc.after != 0 && (c.at.Before(c.before.Add(tc.after)) || c.at.After(c.after.Add(tc.after))):
			t.Errorf("%s: earliest retry %v, want %s after the request", tc.name, c.at, tc.after)
		}
	}
}

// TestWebhookOutcomeHeader: X-Taskd-Outcome asks for a cancel or a snooze
// whatever the status; X-Taskd-Snooze-For says how long (1 s to 24 h, 1
// minute if absent or bad); any other value is a failure not retried.
func TestWebhookOutcomeHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		status    int
		outcome   string
		snoozeFor string
		want      taskservice.Request
		snooze    time.Duration
		wantMsg   string
		wantErr   string
	}{
		{name: "cancel on 200", status: 200, outcome: "cancel", want: taskservice.RequestCancel, wantMsg: "body",
			wantErr: "X-Taskd-Outcome: cancel"},
		{name: "cancel on 500", status: 500, outcome: "Cancel", want: taskservice.RequestCancel, wantMsg: "body"},
		{name: "snooze for 10m", status: 202, outcome: "snooze", snoozeFor: "10m", want: taskservice.RequestSnooze,
			snooze: 10 * time.Minute, wantMsg: "body"},
		{name: "snooze in seconds on 503", status: 503, outcome: " SNOOZE ", snoozeFor: "45", want: taskservice.RequestSnooze,
			snooze: 45 * time.Second, wantMsg: "body"},
		{name: "snooze without a duration", status: 200, outcome: "snooze", want: taskservice.RequestSnooze,
			snooze: DefaultSnooze, wantMsg: "body"},
		{name: "snooze with a bad duration", status: 200, outcome: "snooze", snoozeFor: "tomorrow",
			want: taskservice.RequestSnooze, snooze: DefaultSnooze, wantMsg: "body"},
		{name: "snooze too long", status: 200, outcome: "snooze", snoozeFor: "48h",
			want: taskservice.RequestSnooze, snooze: taskservice.MaxHandlerDelay, wantMsg: "body"},
		{name: "snooze too short", status: 200, outcome: "snooze", snoozeFor: "0s",
			want: taskservice.RequestSnooze, snooze: taskservice.MinSnooze, wantMsg: "body"},
		{name: "unknown outcome", status: 200, outcome: "later", want: taskservice.RequestPermanent,
			wantErr: `X-Taskd-Outcome "later": want cancel or snooze`},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("status"))
		w.Header().Set(OutcomeHeader, r.URL.Query().Get("outcome"))
		if v := r.URL.Query().Get("for"); v != "" {
			w.Header().Set(SnoozeForHeader, v)
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "body")
	}))
	defer srv.Close()
	for _, tc := range tests {
		q := url.Values{"status": {strconv.Itoa(tc.status)}, "outcome": {tc.outcome}, "for": {tc.snoozeFor}}
		c := callWith(srv, q)
		switch {
		case c.asks != tc.want:
			t.Errorf("%s: err = %v asks for %s, want %s", tc.name, c.err, c.asks, tc.want)
		case c.msg != tc.wantMsg:
			t.Errorf("%s: message %q, want %q", tc.name, c.msg, tc.wantMsg)
		case tc.wantErr != "" && !strings.Contains(c.err.Error(), tc.wantErr):
			t.Errorf("%s: err = %q, want it to contain %q", tc.name, c.err, tc.wantErr)
		case tc.want == taskservice.RequestSnooze && (c.at.Before(c.before.Add(tc.snooze)) || c.at.After(c.after.Add(tc.snooze))):
			t.Errorf("%s: snoozed until %v, want %s after the request", tc.name, c.at, tc.snooze)
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
