package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/taskd/taskd/pkg/taskservice"
)

const (
	// maxDrain is how much of a response body is read and discarded after
	// the kept part, so that the connection can be reused; a longer body
	// closes the connection instead.
	maxDrain = 256 << 10
	// maxErrorBody is how much of a failed response's body an error quotes.
	maxErrorBody = 256
)

// WebhookOptions configures a webhook handler. The zero value is ready to use.
type WebhookOptions struct {
	// Client sends the requests; nil means http.DefaultClient. The run's
	// context bounds each request, so the client needs no timeout of its own.
	Client *http.Client
	// Logger receives debug and warning lines; nil discards them.
	Logger hclog.Logger
}

type webhookHandler struct {
	url      string // as given, for the request
	redacted string // without a password, for messages
	urlErr   error  // from ValidateWebhookURL
	client   *http.Client
	logger   hclog.Logger
}

// NewWebhook returns a handler that POSTs each run's payload to rawURL with
// Content-Type application/octet-stream and the headers X-Taskd-Identity,
// X-Taskd-Task-Id, X-Taskd-Kind, X-Taskd-Run, X-Taskd-Fence, X-Taskd-Node,
// X-Taskd-Attempt and X-Taskd-Fire-Time (RFC 3339 with nanoseconds, UTC),
// plus a W3C traceparent header naming the run's span when the run is traced.
//
// A 2xx status is a success, and the response body (at most 64 KiB, one
// trailing newline trimmed) becomes the run's message. 429, 5xx, a
// connection error, a timeout and a node stop are failed attempts, retried
// after the task's backoff up to its max_attempts; on 429 and 503 a
// Retry-After (seconds or an HTTP date, at most 24 h ahead) is the earliest
// retry. Any other status (4xx, a 3xx the client did not follow) is a
// failure not retried. Whatever the status, a response header
// X-Taskd-Outcome: cancel cancels the task, and X-Taskd-Outcome: snooze
// runs the same fire time again after X-Taskd-Snooze-For (a Go duration or
// seconds, 1 s to 24 h; 1 minute if absent) without using an attempt; any
// other value is a failure not retried (see outcomes.go). A URL that
// ValidateWebhookURL rejects makes every run fail permanently: check it
// first.
func NewWebhook(rawURL string, opts WebhookOptions) taskservice.Handler {
	h := &webhookHandler{
		url:      rawURL,
		redacted: rawURL,
		urlErr:   ValidateWebhookURL(rawURL),
		client:   opts.Client,
		logger:   opts.Logger,
	}
	if u, err := url.Parse(rawURL); err == nil {
		h.redacted = u.Redacted()
	}
	if h.client == nil {
		h.client = http.DefaultClient
	}
	if h.logger == nil {
		h.logger = hclog.NewNullLogger()
	}
	return h
}

// Work POSTs the run's payload and sets the response body as its message.
func (h *webhookHandler) Work(ctx context.Context, run *taskservice.Run) error {
	msg, err := h.post(ctx, run)
	if msg != "" {
		run.SetMessage(msg)
	}
	return err
}

// post sends the request and returns the response body as a message, and the
// outcome.
func (h *webhookHandler) post(ctx context.Context, run *taskservice.Run) (string, error) {
	what := fmt.Sprintf("webhook for kind %q: POST %s", run.Kind, h.redacted)
	if h.urlErr != nil {
		return "", taskservice.Permanent(fmt.Errorf("%s: %w", what, h.urlErr))
	}
	headers := [...][2]string{
		{"X-Taskd-Identity", run.Identity},
		{"X-Taskd-Task-Id", run.TaskID},
		{"X-Taskd-Kind", run.Kind},
		{"X-Taskd-Run", strconv.FormatInt(run.RunNumber, 10)},
		{"X-Taskd-Fence", run.Fence.String()},
		{"X-Taskd-Node", run.Node},
		{"X-Taskd-Attempt", strconv.Itoa(run.Attempt)},
		{"X-Taskd-Fire-Time", run.FireTime.UTC().Format(time.RFC3339Nano)},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(run.Payload))
	if err != nil {
		return "", taskservice.Permanent(fmt.Errorf("%s: %w", what, err))
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	if tp := taskservice.TraceParent(ctx); tp != "" {
		req.Header.Set("Traceparent", tp) // the run's span, so the receiver can join its trace
	}
	for _, kv := range headers {
		// net/http would refuse the request with an error that looks like
		// a connection error; no retry can fix this one.
		if i := strings.IndexFunc(kv[1], invalidHeaderRune); i >= 0 {
			return "", taskservice.Permanent(fmt.Errorf("%s: header %s: value %q has a control character at byte %d",
				what, kv[0], kv[1], i))
		}
		req.Header.Set(kv[0], kv[1])
	}

	// The last moment before the request leaves: see LeaseProven.
	if !taskservice.LeaseProven(ctx) {
		return "", taskservice.ErrLeaseNotProven
	}
	resp, err := h.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", taskservice.Retry(fmt.Errorf("%s: %s: %w", what, ctxReason(ctx), ctx.Err()))
		}
		// The *url.Error names the URL (without a password) already.
		return "", taskservice.Retry(fmt.Errorf("webhook for kind %q: %w", run.Kind, err))
	}
	defer resp.Body.Close()
	body := &headBuffer{limit: maxMessage}
	_, readErr := io.Copy(body, io.LimitReader(resp.Body, maxMessage+1))
	if readErr == nil && body.truncated {
		// Let the connection be reused if the rest is short.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
		h.logger.Debug("webhook response body over the message cap, rest discarded",
			"kind", run.Kind, "task", run.TaskID, "url", h.redacted, "cap", maxMessage)
	}

	code := resp.StatusCode
	err = responseOutcome(h.logger, run, what, resp, body.buf, time.Now())
	switch req, _ := taskservice.Requested(err); {
	case req == taskservice.RequestSuccess, req == taskservice.RequestCancel, req == taskservice.RequestSnooze:
		if readErr != nil {
			// The receiver answered: don't ask again because the body was
			// cut short.
			h.logger.Warn("webhook answered but its response body could not be read",
				"kind", run.Kind, "task", run.TaskID, "url", h.redacted, "status", code, "error", readErr)
		}
		return messageText(body.buf, body.truncated), err
	}
	return "", err // the error quotes the start of the body
}

// invalidHeaderRune reports a character that net/http refuses in a header
// value: a control character other than tab.
func invalidHeaderRune(r rune) bool {
	return (r < ' ' && r != '\t') || r == 0x7f
}

// quoteBody renders the start of a failed response's body for an error.
func quoteBody(b []byte) string {
	s := strings.TrimSpace(messageText(b[:min(len(b), maxErrorBody)], len(b) > maxErrorBody))
	if s == "" {
		return ""
	}
	return ": " + strconv.Quote(s)
}

// ValidateWebhookURL checks that u is an absolute http or https URL with a
// host, as --webhook KIND=URL requires.
func ValidateWebhookURL(u string) error {
	parsed, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("invalid webhook URL: %w", err)
	}
	shown := parsed.Redacted()
	switch {
	case parsed.Scheme != "http" && parsed.Scheme != "https":
		return fmt.Errorf("invalid webhook URL %q: scheme must be http or https, not %q", shown, parsed.Scheme)
	case parsed.Hostname() == "":
		return fmt.Errorf("invalid webhook URL %q: no host", shown)
	}
	return nil
}

// ParseKindSpec splits a --exec KIND=COMMAND or --webhook KIND=URL flag value
// at its first '='. The kind must be 1 to 128 bytes of valid UTF-8 with no
// whitespace or control characters; the target must not be blank. The target
// is returned as given.
func ParseKindSpec(s string) (kind, target string, err error) {
	kind, target, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("invalid handler spec %q: want KIND=COMMAND or KIND=URL, found no '='", s)
	}
	if err := validateKind(kind); err != nil {
		return "", "", fmt.Errorf("invalid handler spec %q: %w", s, err)
	}
	if strings.TrimSpace(target) == "" {
		return "", "", fmt.Errorf("invalid handler spec %q: empty command or URL after %q", s, kind+"=")
	}
	return kind, target, nil
}

func validateKind(kind string) error {
	if kind == "" {
		return errors.New("empty kind before '='")
	}
	if len(kind) > taskservice.MaxKindLen {
		return fmt.Errorf("kind is %d bytes, at most %d allowed", len(kind), taskservice.MaxKindLen)
	}
	for i, r := range kind {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(kind[i:], "\uFFFD"):
			return fmt.Errorf("kind %q is not valid UTF-8 at byte %d", kind, i)
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return fmt.Errorf("kind %q has whitespace or a control character (%U) at byte %d", kind, r, i)
		}
	}
	return nil
}
